/**
 * grant_type=authorization_code (RFC 6749 4.1.3, RFC 7636 4.5-4.6, docs/architecture.md
 * "POST /token" validation sequence).
 *
 * Order and state, decided here:
 * - The code is taken with the store's atomic Issued → Used (`store.codes.take`), so
 *   of N concurrent exchanges exactly one gets to run the checks.
 * - When a check then fails (another client, redirect_uri, PKCE, resource),
 *   the code is put back as Issued with its remaining lifetime. docs/architecture.md's
 *   state table says a failing check leaves the code Issued, so a legitimate
 *   client whose request lost a race to a forged one can still redeem it.
 *   Putting back cannot produce a second redemption: only the request that
 *   took the code puts it back, and a successful exchange never does. A
 *   request arriving while a failing one holds the code sees Used with no
 *   grant linked, gets invalid_grant and revokes nothing.
 * - A code found Used after a successful exchange is a replay: the grant it
 *   produced is revoked (refresh family and every access token carrying its
 *   grant_id), RFC 6749 4.1.2 / 10.5. The grant id is linked to the code
 *   before the grant is created, so even a replay racing the first exchange
 *   revokes what it issues.
 * - A code bound to a DPoP key by `dpop_jkt` (RFC 9449 10) is redeemed only
 *   with a proof by that key; otherwise it is a failing check like PKCE.
 * - Every cause is the same 400 invalid_grant; the cause is only logged.
 */
import { type AuthorizationDetails, narrowAuthorizationDetails, requestedDetails, storedDetails } from '../authorization-details/authorization-details.js'
import { createHash } from 'node:crypto'
import { epochSeconds } from '../../clock.js'
import type { ClientConfig } from '../../config/validated-config.js'
import { safeEqual } from '../../crypto/secret.js'
import { InvalidGrant } from '../../errors.js'
import type { CodeRecord } from '../../store/types.js'
import { hashToken } from '../../store/hash.js'
import { startGrant } from '../issue.js'
import { grantIdForCode } from '../grant-id.js'
import { audienceFor, requestedResource } from '../resource.js'
import { revokeGrant } from '../revocation.js'
import type { Grant, GrantRequest, TokenResponse } from './grant-handler.js'
import { strengthOf } from '../sign-in-strength.js'

/** RFC 7636 4.1: code_verifier = 43*128unreserved. */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/

/**
 * Why the PKCE check fails, or null when it passes. S256 is recomputed and
 * compared in constant time; plain is accepted only for a code issued with
 * plain, never as a fallback (RFC 7636 4.6, RFC 9700 2.1.1).
 */
export function pkceFailure(record: CodeRecord, client: ClientConfig, verifier: string | undefined): string | null {
  if (record.codeChallenge === null) {
    if (client.requirePkce) return 'code has no challenge but the client requires PKCE'
    return verifier === undefined ? null : 'code_verifier sent for a code issued without a challenge'
  }
  if (verifier === undefined) return 'code_verifier missing'
  if (!VERIFIER.test(verifier)) return 'code_verifier malformed'
  if (record.codeChallengeMethod === 'plain') {
    return safeEqual(verifier, record.codeChallenge) ? null : 'plain code_verifier mismatch'
  }
  const computed = createHash('sha256').update(verifier, 'ascii').digest('base64url')
  return safeEqual(computed, record.codeChallenge) ? null : 'S256 code_verifier mismatch'
}

/** RFC 6749 4.1.3: identical to the authorization request's; when it sent none, none or the one used. */
function redirectFailure(record: CodeRecord, sent: string | undefined): string | null {
  if (record.redirectUri !== null) return sent === record.redirectUri ? null : 'redirect_uri differs from the authorization request'
  return sent === undefined || sent === record.effectiveRedirectUri ? null : 'redirect_uri differs from the one used'
}

/** RFC 9449 10: a code issued for `dpop_jkt` needs a proof by that key. */
function dpopJktFailure(record: CodeRecord, dpop: { jkt: string } | null): string | null {
  if (record.dpopJkt === undefined) return null
  if (dpop === null) return 'code bound by dpop_jkt, no DPoP proof'
  return dpop.jkt === record.dpopJkt ? null : 'code bound by dpop_jkt to another key'
}

export const authorizationCodeGrant: Grant = {
  params: ['code', 'redirect_uri', 'code_verifier', 'resource', 'authorization_details'],

  async handle({ form, client, as, dpop, mtls }: GrantRequest): Promise<TokenResponse> {
    const code = form.require('code')
    const redirectUri = form.get('redirect_uri')
    const verifier = form.get('code_verifier')
    const resource = requestedResource(form, as)
    const codeHash = hashToken(code)

    const taken = await as.store.codes.take(codeHash)
    const now = epochSeconds(as.clock)
    if (taken.status === 'missing') throw new InvalidGrant(undefined, { cause: 'code unknown or expired' })
    if (taken.status === 'used') {
      // RFC 6749 4.1.2 / docs/architecture.md: a replayed code revokes what it produced. The
      // grant id is derived from the code, so this works even when the replay
      // overtakes the first exchange; the entry lasts as long as that grant's
      // refresh family could.
      const until = now + Math.max(as.as.accessToken.ttlSec, as.as.refreshToken.ttlSec)
      const grantId = taken.grantId ?? grantIdForCode(codeHash)
      await revokeGrant(as, grantId, until)
      as.audit.record({
        event: 'grant.revoked',
        actor: { kind: 'system' },
        subject: { kind: 'grant', id: grantId },
        outcome: 'success',
        reason: 'code_replayed',
      })
      throw new InvalidGrant(undefined, { cause: 'code replayed; its grant is revoked' })
    }
    const record = taken.record
    if (now >= record.expiresAt) throw new InvalidGrant(undefined, { cause: 'code expired' })

    const failure =
      (record.clientId !== client.clientId ? 'code issued to another client' : null) ??
      redirectFailure(record, redirectUri) ??
      pkceFailure(record, client, verifier) ??
      dpopJktFailure(record, dpop)
    let audience: string
    const granted = storedDetails(record.authorizationDetails)
    let details: AuthorizationDetails | undefined
    try {
      if (failure !== null) throw new InvalidGrant(undefined, { cause: failure })
      audience = audienceFor(as, resource, record.resource)
      // RFC 9396 6.1: the token request may name a subset of what the person approved, never more.
      details = narrowAuthorizationDetails(requestedDetails(form, as.authorizationDetailsTypes, client.authorizationDetailsTypes), granted)
    } catch (err) {
      // docs/architecture.md: a failing check leaves the code Issued.
      await as.store.codes.put(codeHash, record, Math.max(1, record.expiresAt - now))
      throw err
    }

    const grantId = grantIdForCode(codeHash)
    await as.store.codes.linkGrant(codeHash, grantId)
    return startGrant(as, {
      grant: 'authorization_code',
      client,
      grantId,
      sub: record.sub,
      scope: record.scope,
      authTime: record.authTime,
      strength: strengthOf(record),
      resource: resource ?? record.resource,
      audience,
      nonce: record.nonce,
      ...(record.sid === undefined ? {} : { sid: record.sid }),
      jkt: dpop?.jkt ?? null,
      x5t: mtls?.x5t ?? null,
      // A code stored by an older version has no issue time: the earliest it can have been issued.
      authorizedAtMs: record.issuedAtMs ?? (record.expiresAt - as.as.codeTtlSec) * 1000,
      ...(granted === undefined ? {} : { grantedDetails: granted }),
      ...(details === undefined ? {} : { authorizationDetails: details }),
    })
  },
}
