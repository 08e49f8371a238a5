/**
 * `POST /idp/{id}/backchannel-logout`: bearward as the relying party of an upstream identity
 * provider that sends OpenID Connect Back-Channel Logout 1.0 logout tokens
 * (`identity_providers[].backchannel_logout: true`; register this URL at the provider).
 *
 * The logout token is checked as section 2.6 says, through the shared JWT assertion checks
 * (jwt-assertion.ts): a compact JWS of at most 16 KiB; an asymmetric `alg` (never `none` or an
 * HMAC, so a public key can never be used as a secret); `typ` `logout+jwt`, `JWT` or none; no key
 * location headers; the signature by the provider's keys (its discovered `jwks_uri`); `iss` the
 * provider's issuer; `aud` our `client_id` there; `exp` in the future and `iat` within
 * LOGOUT_TOKEN_MAX_AGE_SEC (clock skew allowed); the back-channel-logout member of `events` (a
 * JSON object); no `nonce` (which would make it an id_token); `sid` or `sub`; `jti` used once
 * (in the store every instance shares). Then the bearward sessions that came from that provider
 * session (`sid`) or person (`sub`) end (end-sessions.ts), and with `on_logout: grants` the
 * person's grants too.
 *
 * Answers 200 (empty, `Cache-Control: no-store`) when the token is valid, whether or not a
 * session was found (2.8); 400 `invalid_request` otherwise (the reason is logged, never sent);
 * 503 when the provider's keys or the store cannot be reached.
 *
 * @see https://openid.net/specs/openid-connect-backchannel-1_0.html#Validation
 */
import { InvalidRequest, MethodNotAllowed, TemporarilyUnavailable } from '../../errors.js'
import { readForm } from '../../http/body.js'
import { NO_STORE } from '../../http/reply.js'
import { BACKCHANNEL_LOGOUT_EVENT } from '../backchannel-logout/logout-token.js'
import type { AsHandler } from '../context.js'
import { ASYMMETRIC_ALGS, assertionParts, audienceContains, type Refuse, singleUseJti, useJtiOnce, verifyJwtAssertion } from '../jwt-assertion.js'
import { endSessionsByProviderSession, type ProviderSession } from '../sessions/end-sessions.js'
import { ProviderUnavailableError } from './providers.js'

/** Path of a provider's back-channel logout endpoint, relative to the issuer (own-paths.ts, the one list). */
export { backchannelLogoutPath } from '../../config/own-paths.js'

/** A logout token is sent at once: one issued longer ago than this is refused (with the clock skew). */
export const LOGOUT_TOKEN_MAX_AGE_SEC = 300
/** The form holding one logout token: a few KiB at most. */
const BODY_LIMIT = 32 * 1024
/** `sid` and `sub` become store keys: printable ASCII, as long as OIDC allows a `sub`. */
const IDENTIFIER = /^[\x21-\x7e]{1,255}$/
/** The `typ` values a provider's logout token may carry (lower case, without `application/`). */
const TYPES: ReadonlySet<string | undefined> = new Set([undefined, 'jwt', 'logout+jwt'])

/** Which sessions the token names: `sid` when it has one (2.4: then only that session), else `sub`. */
function sessionNamed(claims: Readonly<Record<string, unknown>>, refuse: Refuse): ProviderSession {
  const { sid, sub } = claims
  if (sid !== undefined && (typeof sid !== 'string' || !IDENTIFIER.test(sid))) throw refuse('sid is not a printable string')
  if (sub !== undefined && (typeof sub !== 'string' || !IDENTIFIER.test(sub))) throw refuse('sub is not a printable string')
  if (typeof sid === 'string') return { sid }
  if (typeof sub === 'string') return { sub }
  throw refuse('neither sid nor sub')
}

/** The handler of one provider's endpoint. */
export function upstreamBackchannelLogout(providerId: string): AsHandler {
  return async (req, res, ctx, as) => {
    if (req.method !== 'POST') throw new MethodNotAllowed(['POST'])
    const provider = as.upstream.get(providerId)
    if (provider === undefined || !provider.config.backchannelLogout) throw new MethodNotAllowed(['POST'])
    const refuse: Refuse = (cause) => {
      ctx.log.info({ event: 'provider_logout_refused', provider: providerId, reason: cause }, 'logout token refused')
      return new InvalidRequest('The logout token is invalid', { cause })
    }
    const form = await readForm(req, BODY_LIMIT)
    form.assertNoRepeats(['logout_token'])
    const token = form.get('logout_token')
    if (token === undefined) throw new InvalidRequest('Parameter logout_token is required')
    const parts = assertionParts(token, refuse)

    let signer: Awaited<ReturnType<typeof provider.signer>>
    try {
      signer = await provider.signer()
    } catch (err) {
      if (!(err instanceof ProviderUnavailableError)) throw err
      throw new TemporarilyUnavailable('The identity provider cannot be reached; try again later', { cause: 'provider discovery failed' })
    }
    const rules = {
      algorithms: ASYMMETRIC_ALGS,
      types: TYPES,
      wrongTypCause: 'typ is not logout+jwt',
      keys: signer.keys,
      keyOwner: `identity provider ${providerId}`,
      issuer: signer.issuer,
      requiredClaims: ['iat', 'jti', 'events'],
      audience: audienceContains(provider.config.clientId, 'aud is not our client_id at the provider'),
      maxLifetimeSec: LOGOUT_TOKEN_MAX_AGE_SEC,
      clock: as.clock,
      skewSec: as.config.gateway.clockSkewSec,
    }
    const { claims, usableUntil } = await verifyJwtAssertion(token, parts, rules, refuse)
    // 2.6 point 4-6: the event member (an object), no nonce, and sid or sub.
    const events = claims.events
    const event =
      typeof events === 'object' && events !== null && !Array.isArray(events) ? (events as Record<string, unknown>)[BACKCHANNEL_LOGOUT_EVENT] : undefined
    if (typeof event !== 'object' || event === null || Array.isArray(event)) throw refuse('events has no back-channel-logout member')
    if (claims.nonce !== undefined) throw refuse('nonce present')
    const named = sessionNamed(claims, refuse)
    const jti = singleUseJti(claims, refuse)
    // 2.6 point 7 (optional there, done here): a token used once is refused again on every instance.
    if (!(await useJtiOnce(as.store, 'idp-logout', providerId, jti, usableUntil, rules))) throw refuse('jti already used')

    const grants = provider.config.onLogout === 'grants'
    const ended = await endSessionsByProviderSession(as, providerId, named, 'provider_logout', { grants })
    ctx.log.info(
      {
        event: 'provider_logout',
        provider: providerId,
        by: 'sid' in named ? 'sid' : 'sub',
        sessions: ended.reduce((n, e) => n + e.sessions.length, 0),
        ...(grants ? { grants: ended.reduce((n, e) => n + (e.grantsRevoked ?? 0), 0) } : {}),
      },
      'the identity provider ended sessions',
    )
    res.statusCode = 200
    for (const [name, value] of Object.entries(NO_STORE)) res.setHeader(name, value)
    res.setHeader('content-length', 0)
    res.end()
  }
}
