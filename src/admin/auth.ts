/**
 * Who is calling the admin API: a live access token of bearward's own AS
 * (verified by verifyOwnAccessToken, the gateway's verifier with the same
 * `self` issuer: there is no second verifier), for the audience
 * `{public_url}/admin/v1`, with `bearward:admin` (any call) or
 * `bearward:admin:read` (GET and HEAD only). A DPoP-bound token needs its
 * proof; a revoked token or grant is refused at once (the revocation list).
 * Refusals are the gateway's: 401 with a Bearer (and DPoP) challenge, 403
 * insufficient_scope naming the scope.
 */
import type { IncomingMessage } from 'node:http'
import { ADMIN_READ_SCOPE, ADMIN_SCOPE } from '../config/sections/admin-api.js'
import { proofHeader } from '../dpop/verify-proof.js'
import { InsufficientScope, InvalidDpopProof, InvalidScope, InvalidToken, MissingToken, type OAuthError } from '../errors.js'
import { checkedTokenFromHeader } from '../http/authorization.js'
import { errorAnswer } from '../http/reply.js'
import type { AsContext } from '../as/context.js'
import { type OwnAccessToken, verifyOwnAccessToken } from '../as/verify-token.js'
import { checkCertificateBinding } from '../tokens/certificate-binding.js'
import { adminAudience } from './audience.js'
import { checkAdminScope } from './scope-policy.js'
import { AdminProblem } from './problem.js'

/** The caller of one admin request, for the handlers and the audit trail. */
export interface AdminCaller {
  /** The token's client. */
  clientId: string
  /** The person, or the client id for a client's own token. */
  sub: string
  /** Whether a person (rather than a client on its own behalf) is acting. */
  person: boolean
  jti: string
  grantId: string | null
  /** True with `bearward:admin`; false with `bearward:admin:read` only. */
  write: boolean
}

const READ_METHODS = new Set(['GET', 'HEAD'])

/**
 * The caller of `req`, or an AdminProblem carrying the challenge. `url` is the
 * request's URI as the client addressed it (a DPoP proof's `htu`).
 */
export async function authenticateAdmin(req: IncomingMessage, as: AsContext, url: string): Promise<AdminCaller> {
  try {
    return await caller(req, as, url)
  } catch (err) {
    if (err instanceof AdminProblem) throw err
    if (isOAuthError(err)) throw refusal(err, as)
    throw err
  }
}

async function caller(req: IncomingMessage, as: AsContext, url: string): Promise<AdminCaller> {
  const presented = checkedTokenFromHeader(req)
  if (presented === null) throw new MissingToken()
  const proof = proofHeader(req, 'resource')
  const claims = await verifyOwnAccessToken(as, presented.token)
  if (claims === null) throw new InvalidToken(undefined, { cause: 'not a live access token of this issuer' })
  if (!claims.aud.includes(adminAudience(as.issuer)))
    throw new InvalidToken('The access token is not for the admin API', { cause: 'audience is not the admin API' })
  await checkBinding(req, as, claims, presented.token, presented.dpop, proof, url)
  const scopes = claims.scope.split(' ')
  const write = scopes.includes(ADMIN_SCOPE)
  if (!write && !scopes.includes(ADMIN_READ_SCOPE)) throw new InsufficientScope([ADMIN_SCOPE])
  if (!write && !READ_METHODS.has(req.method ?? 'GET')) throw new InsufficientScope([ADMIN_SCOPE], 'A read-only admin token cannot change anything')
  stillAnAdmin(as, claims)
  return { clientId: claims.clientId, sub: claims.sub, person: claims.grantId !== null, jti: claims.jti, grantId: claims.grantId, write }
}

/**
 * The scope policy once more, against the config of now: it ran when the token was minted, but a
 * reload that takes a client out of `admin_api.clients` (or a person out of `admin_api.people`)
 * must end what their live tokens may do at once, not at their expiry.
 */
function stillAnAdmin(as: AsContext, claims: OwnAccessToken): void {
  // A person's token carries how they signed in; a client's own token carries none of it.
  const person = claims.authTime !== null || claims.amr !== undefined || claims.acr !== undefined
  try {
    checkAdminScope(as.config.adminApi, as.as.mfa !== undefined, {
      scope: claims.scope,
      clientId: claims.clientId,
      sub: claims.sub,
      ...(person ? { strength: { ...(claims.amr === undefined ? {} : { amr: claims.amr }), ...(claims.acr === undefined ? {} : { acr: claims.acr }) } } : {}),
    })
  } catch (err) {
    if (err instanceof InvalidScope)
      throw new InvalidToken('The access token’s holder may no longer use the admin API', { cause: 'admin scope holder no longer in admin_api' })
    throw err
  }
}

async function checkBinding(
  req: IncomingMessage,
  as: AsContext,
  claims: OwnAccessToken,
  token: string,
  dpop: boolean,
  proof: string | null,
  url: string,
): Promise<void> {
  if (claims.jkt !== undefined) {
    if (!dpop) throw new InvalidToken('A DPoP-bound access token must be sent with the DPoP scheme', { cause: 'bound token sent as Bearer' })
    if (proof === null) throw new InvalidDpopProof('A DPoP proof is required', { resource: true, cause: 'no DPoP header' })
    await as.dpop.resource.verify(proof, { method: req.method ?? 'GET', url, accessToken: token, jkt: claims.jkt })
  } else if (dpop) {
    throw new InvalidToken('The access token is not DPoP-bound', { cause: 'DPoP scheme with an unbound token' })
  }
  if (claims.x5t !== undefined) {
    const mismatch = checkCertificateBinding({ 'x5t#S256': claims.x5t }, as.clientCertificates.presented(req))
    if (mismatch !== null) throw mismatch
  }
}

function isOAuthError(err: unknown): err is OAuthError {
  return err instanceof Error && typeof (err as Partial<OAuthError>).status === 'number' && typeof (err as Partial<OAuthError>).error === 'string'
}

/** The gateway's challenge, in a problem document. */
function refusal(err: OAuthError, as: AsContext): AdminProblem {
  const answer = errorAnswer(err, { scope: ADMIN_SCOPE, dpop: { algs: as.dpop.resource.algorithms.join(' '), bearer: true, presented: false } })
  const challenge = answer.headers['www-authenticate']
  const kind = err.status === 401 ? 'unauthorized' : err.status === 403 ? 'forbidden' : 'invalid_request'
  const detail = err.error ? `${err.error}: ${err.description ?? ''}`.trim() : 'A bearer access token is required'
  return new AdminProblem(err.status, kind, detail, challenge === undefined ? {} : { 'www-authenticate': challenge }, err.error || 'no_token')
}
