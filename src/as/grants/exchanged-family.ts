/**
 * The refresh token a token exchange may issue (RFC 8693 2.2.1), for a
 * client whose policy says `refresh_tokens: true`: a refresh family of its
 * own, bound to the grant of the subject token.
 *
 * - It is made only when the subject token belongs to a live grant of ours
 *   (a person's authorization); a client's own token or another issuer's
 *   has no grant whose end could end the family, so it gets none.
 * - Its record keeps the exchanged audience (as the family's `resource`),
 *   the narrowed scope, and an {@link ExchangeBinding}: the subject's grant
 *   id and the `act` claim. Every access token of the family carries the
 *   subject's grant id (as the first exchanged one does), so revoking that
 *   grant (its refresh token, a replay of it, withdrawal on the account
 *   page) revokes them all at once, and the family is refused at its next
 *   refresh (it checks the subject's grant first).
 * - A replaced token of the family presented again revokes the family and,
 *   since its access tokens carry it, the subject's grant too: the one id
 *   that ends them. Only the exchanging client, authenticated, can present
 *   one, so no stranger can end a person's grant this way.
 *
 * The binding rides in the grant record beside its typed fields (both stores
 * keep a record whole); {@link exchangeOf} reads it back and checks its shape.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8693#section-2.2.1
 * @see https://www.rfc-editor.org/rfc/rfc9700#section-4.14.2
 */
import { epochSeconds } from '../../clock.js'
import type { ClientConfig } from '../../config/validated-config.js'
import { randomId, randomToken } from '../../crypto/random.js'
import { InvalidGrant } from '../../errors.js'
import { hashToken } from '../../store/hash.js'
import type { GrantRecord } from '../../store/types.js'
import { accessTokenClaims } from '../claims.js'
import type { AsContext } from '../context.js'
import { issueAccessToken } from '../issue.js'
import { revokeGrant } from '../revocation.js'
import { strengthClaims, strengthOf, type SignInStrength } from '../sign-in-strength.js'
import type { TokenResponse } from './grant-handler.js'

/** What the record of an exchanged family holds beyond a grant's fields. */
export interface ExchangeBinding {
  /** The subject token's grant: the family lives only while it does, and its access tokens carry its id. */
  readonly subjectGrantId: string
  /** RFC 8693 4.1 `act`: who acts, as the exchange named it. */
  readonly act: Record<string, unknown>
}

/** A grant record as stored for an exchanged family. */
type ExchangedGrantRecord = GrantRecord & { exchange: ExchangeBinding }

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The binding of an exchanged family's grant, or undefined for any other grant. */
export function exchangeOf(grant: GrantRecord): ExchangeBinding | undefined {
  const value: unknown = (grant as Partial<ExchangedGrantRecord>).exchange
  if (!isObject(value) || typeof value.subjectGrantId !== 'string' || !isObject(value.act)) return undefined
  return { subjectGrantId: value.subjectGrantId, act: value.act }
}

export interface ExchangedFamilyInput {
  client: ClientConfig
  /** The subject token's grant, or null when it has none. */
  subjectGrantId: string | null
  sub: string
  scope: string
  audience: string
  act: Record<string, unknown>
  authTime: number | null
  strength: SignInStrength
}

/** Start a family bound to the subject's grant and return its first refresh token; null when none is issued. */
export async function startExchangedFamily(as: AsContext, input: ExchangedFamilyInput): Promise<string | null> {
  if (input.client.tokenExchange?.refreshTokens !== true || input.subjectGrantId === null) return null
  if (as.revocations.isRevoked(null, input.subjectGrantId)) return null
  const subjectGrant = await as.store.grants.get(input.subjectGrantId)
  if (subjectGrant === null) return null
  const now = epochSeconds(as.clock)
  const refreshToken = randomToken()
  const record: ExchangedGrantRecord = {
    grantId: randomId(),
    clientId: input.client.clientId,
    sub: input.sub,
    scope: input.scope,
    authTime: input.authTime ?? subjectGrant.authTime,
    ...strengthClaims(input.strength),
    resource: input.audience,
    createdAt: now,
    expiresAt: now + as.as.refreshToken.ttlSec,
    // Its access tokens carry the subject's grant id and are noted there.
    maxAccessExp: now,
    exchange: { subjectGrantId: input.subjectGrantId, act: input.act },
  }
  await as.store.grants.create(record, hashToken(refreshToken))
  return refreshToken
}

/**
 * Before a refresh of an exchanged family: the subject's grant still
 * stands, else the family ends here and the refresh is invalid_grant.
 */
export async function checkSubjectGrant(as: AsContext, grant: GrantRecord, binding: ExchangeBinding): Promise<void> {
  const ended = as.revocations.isRevoked(null, binding.subjectGrantId) || (await as.store.grants.get(binding.subjectGrantId)) === null
  if (!ended) return
  await revokeGrant(as, grant.grantId, Math.max(grant.maxAccessExp, epochSeconds(as.clock)))
  throw new InvalidGrant(undefined, { cause: "token exchange: the subject token's grant is revoked or ended" })
}

/**
 * Before a refresh of an exchanged family: the client's `token_exchange`
 * policy would still start it (refresh tokens on, the family's audience
 * listed), as every refresh is capped by the client's current `scopes`. A
 * policy the operator narrowed or removed stops the family's next refresh;
 * the family is kept, so restoring the policy lets it go on.
 */
export function checkExchangePolicy(client: ClientConfig, grant: GrantRecord): void {
  const policy = client.tokenExchange
  if (policy?.refreshTokens === true && grant.resource !== null && policy.audiences.includes(grant.resource)) return
  throw new InvalidGrant(undefined, { cause: "token exchange: the client's policy no longer covers this family's audience or refresh tokens" })
}

/** A replaced token of an exchanged family came back: revoke the subject's grant, which its access tokens carry. */
export async function revokeSubjectGrant(as: AsContext, binding: ExchangeBinding): Promise<void> {
  const subjectGrant = await as.store.grants.get(binding.subjectGrantId)
  const now = epochSeconds(as.clock)
  await revokeGrant(as, binding.subjectGrantId, Math.max(subjectGrant?.maxAccessExp ?? 0, now + as.as.accessToken.ttlSec))
}

export interface ExchangedRefreshInput {
  scope: string
  audience: string
  refreshToken: string | null
  jkt: string | null
  /** RFC 8705 3: the certificate thumbprint the access token is bound to, or null. */
  x5t: string | null
}

/**
 * The answer to a refresh of an exchanged family: an access token as the
 * exchange issued it (same subject, audience, `act`, the family's scope or
 * narrower, the subject's grant id), no ID token.
 */
export async function exchangedRefreshResponse(
  as: AsContext,
  grant: GrantRecord,
  binding: ExchangeBinding,
  input: ExchangedRefreshInput,
): Promise<TokenResponse> {
  const person = await accessTokenClaims(as, grant.sub, input.scope)
  const access = await issueAccessToken(as, {
    grant: 'refresh_token',
    sub: grant.sub,
    clientId: grant.clientId,
    scope: input.scope,
    grantId: binding.subjectGrantId,
    authTime: grant.authTime,
    strength: strengthOf(grant),
    audience: input.audience,
    jkt: input.jkt,
    x5t: input.x5t,
    claims: { ...person, act: binding.act },
  })
  return {
    access_token: access.token,
    token_type: input.jkt === null ? 'Bearer' : 'DPoP',
    expires_in: access.expiresIn,
    scope: input.scope,
    ...(input.refreshToken === null ? {} : { refresh_token: input.refreshToken }),
  }
}
