/**
 * The checks every JWT assertion bearward accepts shares: a client's
 * `private_key_jwt` (client-assertion.ts), and the JWTs of configured
 * assertion issuers (assertion-issuers.ts: ID-JAGs, workload tokens, actor
 * tokens). What differs between them (the keys, the audience rule, which
 * `typ` values, whether `iat` bounds the lifetime) is the caller's
 * {@link AssertionRules}; the order and the refusals are this module's.
 *
 * In order, each failure a refusal the caller makes (its cause logged, never
 * sent):
 * 1. a compact JWS of at most 16 KiB whose header and payload are JSON objects;
 * 2. `alg` in the caller's list and asymmetric (never `none`, never an HMAC,
 *    so a public key can never serve as a shared secret: RFC 8725 3.1);
 * 3. `typ` (lower case, `application/` prefix dropped, RFC 7515 4.1.9) one
 *    the caller accepts; no `jku`/`x5u`/`jwk`/`x5c` (keys come from
 *    configuration only); a `kid`, when present, a string;
 * 4. the key by `kid` and `alg`, the signature, `iss` (and `sub` when the
 *    caller fixes it), the claims the caller requires, `exp` not passed and
 *    `nbf` not ahead (with the clock skew), no unknown `crit`;
 * 5. `aud` by the caller's rule;
 * 6. `iat` not in the future; with `maxLifetimeSec`, at most that old, or
 *    without an `iat`, `exp` at most that far ahead.
 * A `jti` the caller makes single use is recorded by {@link useJtiOnce},
 * when the caller's own checks have passed.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-3
 * @see https://www.rfc-editor.org/rfc/rfc8725#section-3.1
 */
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose'
import type { Clock } from '../clock.js'
import { hashToken } from '../store/hash.js'
import type { Store } from '../store/types.js'
import type { KeyLookup, VerificationKey } from '../tokens/verify-jwt.js'

/** The asymmetric JWS algorithms an assertion may be signed with; any other (`none`, HS*) is refused whatever a caller allows. */
export const ASYMMETRIC_ALGS: readonly string[] = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']

/** An assertion is a few hundred bytes; a much larger one is not one. */
export const MAX_ASSERTION_BYTES = 16 * 1024

/** `jti` is chosen by the signer: past this length it is refused rather than stored. */
export const MAX_JTI_LENGTH = 256

const ASYMMETRIC: ReadonlySet<string> = new Set(ASYMMETRIC_ALGS)
const KEY_LOCATION_HEADERS = ['jku', 'x5u', 'jwk', 'x5c'] as const

/** Makes the error a failed check throws; `cause` is for the log only. */
export type Refuse = (cause: string) => Error

/** The decoded, unverified parts of a compact JWS. */
export interface AssertionParts {
  readonly header: Readonly<Record<string, unknown>>
  readonly payload: Readonly<Record<string, unknown>>
}

/** What one kind of assertion is checked against. */
export interface AssertionRules {
  /** Algorithms this kind allows (only the asymmetric ones of them are ever used). */
  readonly algorithms: readonly string[]
  /** Accepted `typ` values, lower case without `application/`; `undefined` in the set: absent is fine. */
  readonly types: ReadonlySet<string | undefined>
  /** The cause logged for a `typ` outside {@link types}. */
  readonly wrongTypCause: string
  /** Where the signer's keys are; `resolve` may reject (TemporarilyUnavailable), which the caller handles. */
  readonly keys: KeyLookup
  /** Whose keys they are, for the log: `no key of the <keyOwner> for kid and alg`. */
  readonly keyOwner: string
  /** The exact `iss`. */
  readonly issuer: string
  /** The exact `sub`, when the kind fixes it. */
  readonly subject?: string
  /** Claims that must be present (jose refuses the assertion before anything reads them). */
  readonly requiredClaims: readonly string[]
  /** The cause to refuse `aud` with, or undefined when it is accepted. */
  readonly audience: (aud: unknown) => string | undefined
  /** How long an assertion may be used at most (bounded by `iat`); absent: until its `exp`. */
  readonly maxLifetimeSec?: number
  readonly clock: Clock
  readonly skewSec: number
}

/** A verified assertion's claims and the last second (epoch) it may be used. */
export interface VerifiedJwt {
  readonly claims: JWTPayload & { exp: number }
  readonly usableUntil: number
}

function decodePart(segment: string | undefined): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(segment ?? '', 'base64url').toString('utf8'))
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** The header and unverified payload of a compact JWS of reasonable size, or a refusal. */
export function assertionParts(assertion: string, refuse: Refuse): AssertionParts {
  if (assertion.length > MAX_ASSERTION_BYTES) throw refuse('too large')
  const segments = assertion.split('.')
  if (segments.length !== 3) throw refuse('not a compact JWS')
  const header = decodePart(segments[0])
  const payload = decodePart(segments[1])
  if (header === undefined || payload === undefined) throw refuse('header or payload is not a JSON object')
  return { header, payload }
}

/** The unverified payload of a compact JWS, or undefined: only to choose whose rules then verify it. */
export function unverifiedPayload(assertion: string): Readonly<Record<string, unknown>> | undefined {
  if (assertion.length > MAX_ASSERTION_BYTES) return undefined
  return decodePart(assertion.split('.')[1])
}

/** The unverified `iss` of a compact JWS, or undefined (see {@link unverifiedPayload}). */
export function unverifiedIssuer(assertion: string): string | undefined {
  const iss = unverifiedPayload(assertion)?.iss
  return typeof iss === 'string' ? iss : undefined
}

/** `typ` as compared: lower case, without the optional `application/` (RFC 7515 4.1.9); a non-string is refused. */
function normalTyp(typ: unknown, refuse: Refuse): string | undefined {
  if (typ === undefined) return undefined
  if (typeof typ !== 'string') throw refuse('typ is not a string')
  return typ.toLowerCase().replace(/^application\//, '')
}

/** The key the header names, or a refusal; the header's own rules are checked first. */
async function keyFor(header: AssertionParts['header'], rules: AssertionRules, refuse: Refuse): Promise<{ alg: string; key: VerificationKey }> {
  const alg = header.alg
  if (typeof alg !== 'string' || !ASYMMETRIC.has(alg) || !rules.algorithms.includes(alg)) throw refuse('alg not allowed')
  if (!rules.types.has(normalTyp(header.typ, refuse))) throw refuse(rules.wrongTypCause)
  for (const name of KEY_LOCATION_HEADERS) if (header[name] !== undefined) throw refuse(`header ${name} present`)
  const kid = header.kid
  if (kid !== undefined && typeof kid !== 'string') throw refuse('kid is not a string')
  const key = await rules.keys.resolve(kid, alg)
  if (key === undefined) throw refuse(`no key of the ${rules.keyOwner} for kid and alg`)
  return { alg, key }
}

/**
 * The last second (epoch) the assertion may be used: its `exp`, and with
 * `maxLifetimeSec` no later than that after its `iat` (without an `iat`,
 * `exp` itself must be that close). `iat` is never in the future.
 */
function lastUsableSecond(claims: JWTPayload & { exp: number }, rules: AssertionRules, now: number, refuse: Refuse): number {
  const { iat, exp } = claims
  const { maxLifetimeSec, skewSec } = rules
  if (iat !== undefined && typeof iat !== 'number') throw refuse('iat is not a number')
  if (iat !== undefined && iat > now + skewSec) throw refuse('iat in the future')
  if (maxLifetimeSec === undefined) return exp
  if (iat === undefined) {
    if (exp - now > maxLifetimeSec + skewSec) throw refuse('exp too far ahead')
    return exp
  }
  if (now - iat > maxLifetimeSec + skewSec) throw refuse('iat too old')
  return Math.min(exp, iat + maxLifetimeSec)
}

/**
 * Verify `assertion` (already split by {@link assertionParts}) by `rules`.
 * Throws what `refuse` makes; rejects as `rules.keys.resolve` does when the
 * keys cannot be loaded.
 */
export async function verifyJwtAssertion(assertion: string, parts: AssertionParts, rules: AssertionRules, refuse: Refuse): Promise<VerifiedJwt> {
  const { alg, key } = await keyFor(parts.header, rules, refuse)
  let claims: JWTPayload
  try {
    const result = await jwtVerify(assertion, key.key, {
      algorithms: [alg],
      issuer: rules.issuer,
      ...(rules.subject === undefined ? {} : { subject: rules.subject }),
      clockTolerance: rules.skewSec,
      crit: {},
      requiredClaims: [...rules.requiredClaims, 'exp'],
      currentDate: new Date(rules.clock.now()),
    })
    claims = result.payload
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw refuse('expired')
    const code = err instanceof joseErrors.JOSEError ? err.code : 'ERR_KEY_TYPE'
    const claim = err instanceof joseErrors.JWTClaimValidationFailed ? ` (${err.claim})` : ''
    throw refuse(`${code}${claim}`)
  }
  const verified = claims as JWTPayload & { exp: number }
  const audProblem = rules.audience(verified.aud)
  if (audProblem !== undefined) throw refuse(audProblem)
  return { claims: verified, usableUntil: lastUsableSecond(verified, rules, Math.floor(rules.clock.now() / 1000), refuse) }
}

/** The `jti` of verified claims when it can be made single use, or a refusal. */
export function singleUseJti(claims: JWTPayload, refuse: Refuse): string {
  const jti = claims.jti
  if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) throw refuse('jti missing or too long')
  return jti
}

/**
 * Record `jti` of `signer` under `namespace` until the assertion can no
 * longer be used (plus the skew), in the store every instance shares: true
 * the first time, false for a replay (RFC 7523 3 point 7). Rejects with
 * StoreUnavailableError when the store cannot say (the caller fails closed).
 *
 * The checks judge whole seconds: the assertion is accepted through the
 * last millisecond of second `usableUntil + skewSec`. The record is kept
 * until that second ends, counted from the clock's milliseconds; counted
 * in whole seconds from now, it would end as far into that second as now
 * is into this one, and a replay later in it would be taken for a first use.
 */
export async function useJtiOnce(
  store: Store,
  namespace: string,
  signer: string,
  jti: string,
  usableUntil: number,
  rules: Pick<AssertionRules, 'clock' | 'skewSec'>,
): Promise<boolean> {
  const untilMs = (usableUntil + rules.skewSec + 1) * 1000
  return store.singleUse.use(`${namespace}:${hashToken(`${signer}\n${jti}`)}`, Math.max(1, (untilMs - rules.clock.now()) / 1000))
}

/** `aud` as one string: a string, or a list of exactly one. */
export function singleAudience(aud: unknown): string | undefined {
  if (typeof aud === 'string') return aud
  if (Array.isArray(aud) && aud.length === 1 && typeof aud[0] === 'string') return aud[0]
  return undefined
}

/** The audience rule "`aud` contains `expected`" (a string equal to it, or a list holding it). */
export function audienceContains(expected: string, wrongCause: string): (aud: unknown) => string | undefined {
  return (aud) => (aud === expected || (Array.isArray(aud) && aud.includes(expected)) ? undefined : wrongCause)
}
