/**
 * Minting of access tokens (RFC 9068 JWT or opaque), refresh tokens and ID
 * tokens (OIDC Core 2). Token values never leave this module except in the
 * token response; the store sees only their hashes.
 */
import type { AuthorizationDetails } from './authorization-details/authorization-details.js'
import { createHash } from 'node:crypto'
import { randomId, randomToken } from '../crypto/random.js'
import { labelKey } from '../metrics.js'
import { signJwt } from '../keys/sign.js'
import { epochSeconds } from '../clock.js'
import { InvalidGrant } from '../errors.js'
import type { ClientConfig } from '../config/validated-config.js'
import type { SigningAlg } from '../keys/keyset.js'
import { hashToken } from '../store/hash.js'
import { accessTokenClaims, claimsForScope, findPersonBySub } from './claims.js'
import type { AsContext } from './context.js'
import type { TokenResponse } from './grants/grant-handler.js'
import { hasScope } from './scope.js'
import { providerOfSubject } from './identity-providers/person.js'
import { checkAdminScope } from '../admin/scope-policy.js'
import { type SignInStrength, strengthClaims } from './sign-in-strength.js'

/** Label of `bearward_tokens_issued_total{grant}`. */
export type GrantLabel = 'authorization_code' | 'refresh_token' | 'client_credentials' | 'device_code' | 'jwt_bearer' | 'token_exchange' | 'ciba'

/** The rendered label sets, built once (issuing is a hot path). */
const GRANT_LABELS: Readonly<Record<GrantLabel, string>> = {
  authorization_code: labelKey({ grant: 'authorization_code' }),
  refresh_token: labelKey({ grant: 'refresh_token' }),
  client_credentials: labelKey({ grant: 'client_credentials' }),
  device_code: labelKey({ grant: 'device_code' }),
  jwt_bearer: labelKey({ grant: 'jwt_bearer' }),
  token_exchange: labelKey({ grant: 'token_exchange' }),
  ciba: labelKey({ grant: 'ciba' }),
}

export interface AccessTokenInput {
  grant: GrantLabel
  /** The user, or the client id for client_credentials. */
  sub: string
  clientId: string
  /** Granted scope, space separated. */
  scope: string
  /** The grant the token belongs to; revoking the grant revokes the token. */
  grantId: string | null
  /** Epoch seconds of the user's login, when there was one. */
  authTime: number | null
  /** How the person signed in (amr/acr claims); absent for a client's own token. */
  strength?: SignInStrength
  /** `aud`: public_url, or the RFC 8707 resource. */
  audience: string
  /** Thumbprint of the DPoP key the token is bound to (RFC 9449 6); absent or null for a bearer token. */
  jkt?: string | null
  /** `x5t#S256` of the client certificate the token is bound to (RFC 8705 3.1); absent or null when not bound. */
  x5t?: string | null
  /** The person's claims the token carries (accessTokenClaims); never registered claims. */
  claims?: Readonly<Record<string, unknown>>
  /**
   * The access-token expiry the grant already records (a grant created for
   * this very response): a token expiring no later needs no store write.
   */
  notedAccessExp?: number
  /** Epoch seconds the token may not outlive (a token exchange's subject token's `exp`); default: `access_token.ttl` from now. */
  notAfter?: number
  /** RFC 9396 9.1: the authorization details the token carries (claim `authorization_details`); absent: none. */
  authorizationDetails?: AuthorizationDetails
}

export interface IssuedAccessToken {
  token: string
  jti: string
  iat: number
  exp: number
  expiresIn: number
}

/**
 * Issue an access token in the configured format and note its expiry on its
 * grant (a grant revocation must outlive every token issued under it).
 *
 * JWT: header `typ: at+jwt`, claims iss, sub, aud, exp, iat, jti, client_id,
 * scope, grant_id and auth_time (RFC 9068 2.2); no personal data; `cnf.jkt`
 * for a DPoP-bound token (RFC 9449 6.1).
 * Opaque: 32 random bytes; the claims (and the thumbprint, RFC 9449 6.2) stay
 * in the store under the token's hash.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9068#section-2
 */
export async function issueAccessToken(as: AsContext, input: AccessTokenInput): Promise<IssuedAccessToken> {
  // The admin scopes' one gate: every grant type, refresh and exchange mints here.
  checkAdminScope(as.config.adminApi, as.as.mfa !== undefined, input)
  const iat = epochSeconds(as.clock)
  const exp = Math.min(iat + as.as.accessToken.ttlSec, input.notAfter ?? Number.POSITIVE_INFINITY)
  const expiresIn = exp - iat
  const jti = randomId()
  const jkt = input.jkt ?? null
  const x5t = input.x5t ?? null
  let token: string
  if (as.as.accessToken.format === 'opaque') {
    token = randomToken()
    await as.store.opaqueTokens.put(hashToken(token), {
      iss: as.issuer,
      sub: input.sub,
      aud: [input.audience],
      clientId: input.clientId,
      scope: input.scope,
      jti,
      iat,
      exp,
      grantId: input.grantId,
      ...(jkt === null ? {} : { jkt }),
      ...(x5t === null ? {} : { x5t }),
      ...(input.claims === undefined ? {} : { claims: { ...input.claims } }),
      ...(input.authTime === null ? {} : { authTime: input.authTime }),
      ...strengthClaims(input.strength),
      ...(input.authorizationDetails === undefined ? {} : { authorizationDetails: [...input.authorizationDetails] }),
    })
  } else {
    // The person's claims first: every registered claim below is set after them.
    const claims: Record<string, unknown> = { ...input.claims, client_id: input.clientId, scope: input.scope }
    if (jkt !== null) claims.cnf = { jkt }
    // RFC 8705 3.1; config and /token let a token carry one binding, never both.
    if (x5t !== null) claims.cnf = { 'x5t#S256': x5t }
    if (input.grantId !== null) claims.grant_id = input.grantId
    if (input.authTime !== null) claims.auth_time = input.authTime
    Object.assign(claims, strengthClaims(input.strength))
    // RFC 9396 9.1: the granted details travel in the token, for the resource server.
    if (input.authorizationDetails !== undefined) claims.authorization_details = input.authorizationDetails
    // RFC 9068 2.2: iss, exp, aud, sub, client_id, iat, jti (+ scope, auth_time, acr, amr).
    // RFC 9470 3 reads acr and auth_time from the token for step-up.
    token = await signJwt(as.keys.signing, 'at+jwt', { ...claims, iss: as.issuer, sub: input.sub, aud: input.audience, iat, exp, jti })
  }
  if (input.grantId !== null && !(input.notedAccessExp !== undefined && exp <= input.notedAccessExp)) await as.store.grants.noteAccessExp(input.grantId, exp)
  as.metrics.tokensIssued.incKey(GRANT_LABELS[input.grant])
  return { token, jti, iat, exp, expiresIn }
}

/** OIDC Core 3.1.3.6: the hash behind at_hash follows the signing algorithm's hash. */
function atHashAlgorithm(alg: SigningAlg): 'sha256' | 'sha384' | 'sha512' {
  switch (alg) {
    case 'ES384':
      return 'sha384'
    case 'EdDSA':
      return 'sha512' // Ed25519's hash, by the convention OIDC implementations follow
    default:
      return 'sha256'
  }
}

/** at_hash: base64url of the left half of the hash of the access token's ASCII octets. */
export function atHash(accessToken: string, alg: SigningAlg): string {
  const digest = createHash(atHashAlgorithm(alg)).update(accessToken, 'ascii').digest()
  return digest.subarray(0, digest.length / 2).toString('base64url')
}

export interface IdTokenInput {
  sub: string
  clientId: string
  /** Granted scope; profile/email/... release the user's claims. */
  scope: string
  authTime: number | null
  /** How the person signed in: the `amr` and `acr` claims. */
  strength?: SignInStrength
  nonce: string | null
  /** The session's id for relying parties (OIDC Back-Channel Logout 1.0 2.4), when known. */
  sid?: string
  /** The access token issued alongside, for at_hash. */
  accessToken: string
}

/**
 * Issue an ID token: header `typ: JWT`, aud = the client, azp, auth_time,
 * amr and acr (how the person signed in), nonce when the authorization request carried one, at_hash, and the user
 * claims the granted scopes release.
 *
 * @see https://openid.net/specs/openid-connect-core-1_0.html#IDToken
 */
export async function issueIdToken(as: AsContext, input: IdTokenInput): Promise<string> {
  const iat = epochSeconds(as.clock)
  const key = as.keys.idToken
  const user = await findPersonBySub(as, input.sub)
  const claims: Record<string, unknown> = user === undefined ? {} : claimsForScope(user, input.scope)
  claims.azp = input.clientId
  claims.at_hash = atHash(input.accessToken, key.alg)
  if (input.authTime !== null) claims.auth_time = input.authTime
  Object.assign(claims, strengthClaims(input.strength))
  if (input.nonce !== null) claims.nonce = input.nonce
  if (input.sid !== undefined) claims.sid = input.sid
  // Registered claims last: a user's configured claims can never replace them.
  return await signJwt(key, 'JWT', { ...claims, iss: as.issuer, sub: input.sub, aud: input.clientId, iat, exp: iat + as.as.idToken.ttlSec })
}

export interface UserTokensInput {
  grant: GrantLabel
  clientId: string
  grantId: string
  sub: string
  scope: string
  authTime: number | null
  strength?: SignInStrength
  audience: string
  /** From the authorization request; null at refresh and for device codes. */
  nonce: string | null
  /** The session's `sid` for the id_token, when known (the code's, or the grant's at refresh). */
  sid?: string
  /** The refresh token value to hand out, or null when none is issued this time. */
  refreshToken: string | null
  /** DPoP key thumbprint the access token is bound to, or null. */
  jkt: string | null
  /** Client certificate thumbprint the access token is bound to (RFC 8705 3), or null. */
  x5t: string | null
  /** See AccessTokenInput.notedAccessExp. */
  notedAccessExp?: number
  /** RFC 9396: the details the tokens carry (and the response names, 7); absent: none. */
  authorizationDetails?: AuthorizationDetails
}

/**
 * The token response for a grant made by a user: access token, the refresh
 * token when one was issued, and an ID token when `openid` was granted.
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-5.1
 */
export async function userTokenResponse(as: AsContext, input: UserTokensInput): Promise<TokenResponse> {
  const claims = await accessTokenClaims(as, input.sub, input.scope)
  const access = await issueAccessToken(as, claims === undefined ? input : { ...input, claims })
  const body: TokenResponse = {
    access_token: access.token,
    token_type: input.jkt === null ? 'Bearer' : 'DPoP',
    expires_in: access.expiresIn,
    scope: input.scope,
  }
  // RFC 9396 7: the response says which details the access token holds.
  if (input.authorizationDetails !== undefined) body.authorization_details = input.authorizationDetails
  if (input.refreshToken !== null) body.refresh_token = input.refreshToken
  if (hasScope(input.scope, 'openid')) {
    body.id_token = await issueIdToken(as, {
      sub: input.sub,
      clientId: input.clientId,
      scope: input.scope,
      authTime: input.authTime,
      ...(input.strength === undefined ? {} : { strength: input.strength }),
      nonce: input.nonce,
      ...(input.sid === undefined ? {} : { sid: input.sid }),
      accessToken: access.token,
    })
  }
  return body
}

export interface NewGrantInput {
  grant: GrantLabel
  client: ClientConfig
  grantId: string
  sub: string
  scope: string
  authTime: number
  /** How the person signed in; the grant keeps it for every refresh (absent: nothing known). */
  strength?: SignInStrength
  /** RFC 8707 resource the grant is bound to, or null. */
  resource: string | null
  audience: string
  nonce: string | null
  /** The session's `sid` (from the code): the grant keeps it for id_tokens at refresh. */
  sid?: string
  /** The DPoP key thumbprint of the token request, or null. */
  jkt: string | null
  /** The client certificate thumbprint the tokens are bound to (RFC 8705 3); absent or null when not bound. */
  x5t?: string | null
  /**
   * Epoch ms the person gave this authorization (an authorization code's issue time): when they
   * withdrew the client at or after it, no grant is made (invalid_grant).
   */
  authorizedAtMs?: number
  /** RFC 9396: the details the person approved; the grant keeps them, so every refresh can carry (or narrow) them. */
  grantedDetails?: AuthorizationDetails
  /** The details this first access token carries (a narrowing of `grantedDetails` at the code exchange, RFC 9396 6.1). */
  authorizationDetails?: AuthorizationDetails
}

/**
 * Whether `sub` may still sign in: a local person the directory answers (not disabled, not
 * deleted, not removed from YAML), or someone of a configured identity provider (not disabled here).
 */
async function maySignIn(as: AsContext, sub: string): Promise<boolean> {
  if ((await as.people.bySub(sub)) !== undefined) return true
  return providerOfSubject(sub, as.upstream) !== null
}

/**
 * A user's authorization becomes a grant: the root of a refresh family
 * (with its first refresh token when the client may refresh), then the
 * token response. Shared by the authorization-code, device-code and CIBA grants.
 * With a DPoP proof (or a bound client's certificate, RFC 8705 3) the access
 * token is bound to its key, and so is a public client's refresh family (RFC 9449 5: a confidential client's refresh token
 * is already bound to its client authentication).
 */
export async function startGrant(as: AsContext, input: NewGrantInput): Promise<TokenResponse> {
  // Before anything is stored: a person who may not hold the admin scopes leaves no grant behind.
  checkAdminScope(as.config.adminApi, as.as.mfa !== undefined, {
    scope: input.scope,
    clientId: input.client.clientId,
    sub: input.sub,
    strength: input.strength ?? {},
  })
  const now = epochSeconds(as.clock)
  const refreshToken = input.client.grantTypes.includes('refresh_token') ? randomToken() : null
  const accessExp = now + as.as.accessToken.ttlSec
  const expiresAt = refreshToken === null ? accessExp : now + as.as.refreshToken.ttlSec
  // Indexed first, so every grant that exists can be found (and withdrawn) on the person's account page;
  // in the same atomic step the store refuses an authorization the person withdrew after giving it.
  const noted = await as.store.allowances.note(input.sub, input.client.clientId, {
    scopes: input.scope.split(' ').filter((s) => s !== ''),
    at: now,
    grantId: input.grantId,
    until: expiresAt,
    ...(input.authorizedAtMs === undefined ? {} : { authorizedAtMs: input.authorizedAtMs }),
  })
  if (!noted) throw new InvalidGrant(undefined, { cause: 'the person withdrew this client after authorizing it' })
  // A code or device code outlives the sign-in that approved it: a person disabled or deleted since
  // (a leaver polling a device code approved minutes before) gets no grant. Read after the note, so a
  // disable running now has either set its flag before this read or lists this grant and revokes it.
  if (!(await maySignIn(as, input.sub))) throw new InvalidGrant(undefined, { cause: 'the person was disabled or removed after authorizing' })
  await as.store.grants.create(
    {
      grantId: input.grantId,
      clientId: input.client.clientId,
      sub: input.sub,
      scope: input.scope,
      authTime: input.authTime,
      ...strengthClaims(input.strength),
      resource: input.resource,
      createdAt: now,
      expiresAt,
      maxAccessExp: accessExp,
      ...(input.jkt !== null && input.client.type === 'public' ? { jkt: input.jkt } : {}),
      // RFC 8705 4: likewise a public client's family is bound to its certificate.
      ...(input.x5t != null && input.client.type === 'public' ? { x5t: input.x5t } : {}),
      ...(input.sid === undefined ? {} : { sid: input.sid }),
      ...(input.grantedDetails === undefined ? {} : { authorizationDetails: [...input.grantedDetails] }),
    },
    refreshToken === null ? null : hashToken(refreshToken),
  )
  // The person's authorization became a grant at /token; `reason` names the grant type, not a refusal.
  as.audit.record({
    event: 'grant.created',
    actor: { kind: 'person', id: input.sub },
    subject: { kind: 'grant', id: input.grantId },
    clientId: input.client.clientId,
    outcome: 'success',
    reason: input.grant === 'authorization_code' || input.grant === 'ciba' ? input.grant : 'device_code',
  })
  return userTokenResponse(as, {
    grant: input.grant,
    clientId: input.client.clientId,
    grantId: input.grantId,
    sub: input.sub,
    scope: input.scope,
    authTime: input.authTime,
    ...(input.strength === undefined ? {} : { strength: input.strength }),
    audience: input.audience,
    nonce: input.nonce,
    ...(input.sid === undefined ? {} : { sid: input.sid }),
    refreshToken,
    jkt: input.jkt,
    x5t: input.x5t ?? null,
    // grants.create recorded maxAccessExp = accessExp: the access token below needs no second write.
    notedAccessExp: accessExp,
    ...(input.authorizationDetails === undefined ? {} : { authorizationDetails: input.authorizationDetails }),
  })
}
