import { epochSeconds } from '../../clock.js'
import { hashToken } from '../../store/hash.js'
import type { CodeRecord } from '../../store/types.js'
import type { AsContext } from '../context.js'
import { strengthOf } from '../sign-in-strength.js'
import type { AuthorizationRequest } from './authorization-request.js'
import type { ActiveSession } from './session.js'
import { randomToken } from '../../crypto/random.js'
import { InvalidRequestUri } from '../../errors.js'
import { finishHeld } from './held-request.js'
import { FAPI2_MAX_CODE_TTL_SEC } from '../../config/sections/security-profile.js'

/**
 * Mint an authorization code (RFC 6749 4.1.2): 32 random bytes, base64url;
 * only its hash is stored, with everything /token must check (client,
 * redirect URI, PKCE challenge) and what the tokens will carry (scope, sub,
 * auth_time, amr, acr, nonce, resource, authorization_details). Single use and short-lived: `code_ttl`
 * (RFC 9700 4.1.1 / docs/architecture.md: at most 10 minutes; a FAPI 2.0
 * client's at most 60 s). A held request
 * (held-request.ts) is finished here, so it yields one code.
 */
export async function issueCode(as: AsContext, request: AuthorizationRequest, session: ActiveSession): Promise<string> {
  // RFC 9126 7.3: one code per pushed request (or request object); a second tab finishing the same one gets none.
  if (request.held !== null && !(await finishHeld(as, request.held.key))) {
    throw new InvalidRequestUri('This authorization request has already been completed or has expired', { cause: 'held request already finished' })
  }
  const code = randomToken()
  // FAPI 2.0 5.3.2.2: a FAPI client's code lives at most 60 s, whatever `code_ttl` allows the others.
  const ttlSec = request.client.profile === 'fapi2' ? Math.min(as.as.codeTtlSec, FAPI2_MAX_CODE_TTL_SEC) : as.as.codeTtlSec
  const record: CodeRecord = {
    clientId: request.client.clientId,
    redirectUri: request.redirectUri,
    effectiveRedirectUri: request.target.uri,
    codeChallenge: request.codeChallenge,
    codeChallengeMethod: request.codeChallengeMethod,
    scope: request.scopes.join(' '),
    sub: session.user.sub,
    authTime: session.record.authTime,
    ...strengthOf(session.record),
    nonce: request.nonce,
    resource: request.resource,
    expiresAt: epochSeconds(as.clock) + ttlSec,
    // A withdrawal of this client at or after this moment refuses the exchange (issue.ts, startGrant).
    issuedAtMs: as.clock.now(),
  }
  if (request.dpopJkt !== null) record.dpopJkt = request.dpopJkt
  if (session.record.sid !== undefined) record.sid = session.record.sid
  if (request.authorizationDetails !== null) record.authorizationDetails = [...request.authorizationDetails]
  await as.store.codes.put(hashToken(code), record, ttlSec)
  // The client gets an id_token in this session: when the session ends it gets a logout token (Back-Channel Logout 1.0 2.5).
  if (request.client.backchannelLogout !== undefined && request.scopes.includes('openid')) {
    await as.store.sessions.noteClient(hashToken(session.id), request.client.clientId)
  }
  return code
}
