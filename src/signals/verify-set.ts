/**
 * Verification of a Security Event Token (RFC 8417) from a configured
 * transmitter, the same for push (RFC 8935 §2) and poll (RFC 8936 §2):
 *
 * 1. compact JWS, protected header a JSON object; `alg` in the transmitter's
 *    allow-list (asymmetric only: never `none`, never HMAC); `jku`, `x5u`,
 *    `jwk`, `x5c` never followed (refused); `typ`, when set, `secevent+jwt`
 *    (RFC 8417 §2.3: a SET is not an access or ID token);
 * 2. `iss` (read before the signature only to pick the transmitter) one of
 *    the configured transmitters' → else invalid_issuer;
 * 3. the key by `kid` from its jwks_uri, through the gateway's JWKS client
 *    (cached, bounded refetches; keys that cannot be loaded: 503) → else invalid_key;
 * 4. the signature → else invalid_key; `aud` contains the transmitter's
 *    audience → else invalid_audience;
 * 5. `iat` present, not in the future past the clock skew and not older than
 *    the window `jti`s are remembered for; `jti` a string; `events` an object
 *    with at least one member → else invalid_request. No `exp` is required
 *    (RFC 8417 §2.2); one present is checked.
 */
import { errors as joseErrors, jwtVerify, type JWTPayload } from 'jose'
import type { Clock } from '../clock.js'
import type { SignalTransmitterConfig } from '../config/validated-config.js'
import { OAuthError } from '../errors.js'
import type { KeyLookup } from '../tokens/verify-jwt.js'
import { SetRefused } from './set-error.js'

/** A transmitter as verification sees it: its config and its keys. */
export interface TransmitterKeys {
  readonly config: SignalTransmitterConfig
  readonly keys: KeyLookup
}

/** How a SET arrived: pushed to us, or in the answer to a poll of `issuer`. */
export type SetDelivery = { kind: 'push' } | { kind: 'poll'; issuer: string }

/** A verified SET's claims the receiver reads. */
export interface VerifiedSet {
  readonly transmitter: SignalTransmitterConfig
  readonly jti: string
  readonly iat: number
  readonly claims: Readonly<JWTPayload>
  readonly events: Readonly<Record<string, Readonly<Record<string, unknown>>>>
}

const KEY_LOCATION_HEADERS = ['jku', 'x5u', 'jwk', 'x5c'] as const
/** A `jti` longer than this is not an identifier but a payload. */
const MAX_JTI = 256
/** Events in one SET: RFC 8417 expects one; a handful is generous. */
const MAX_EVENTS = 16

function decodeJson(segment: string | undefined): Record<string, unknown> | undefined {
  if (segment === undefined) return undefined
  try {
    const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'))
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

export interface SetVerifierOptions {
  clock: Clock
  /** Leeway for `iat` in the future and a present `exp` (the gateway's `clock_skew`). */
  clockSkewSec: number
  /** How long a `jti` is remembered; an older `iat` could be a replay, so it is refused. */
  maxAgeSec: number
}

export class SetVerifier {
  readonly #byIssuer: ReadonlyMap<string, TransmitterKeys>
  readonly #options: SetVerifierOptions

  constructor(transmitters: readonly TransmitterKeys[], options: SetVerifierOptions) {
    this.#byIssuer = new Map(transmitters.map((t) => [t.config.issuer, t]))
    this.#options = options
  }

  /**
   * Verify `token`, delivered by `via`: push only from a push transmitter;
   * poll names the transmitter it asked, and a SET of another issuer in its
   * answer is refused as invalid_issuer. Rejects with {@link SetRefused}.
   */
  async verify(token: string, via: SetDelivery): Promise<VerifiedSet> {
    const parts = token.split('.')
    if (parts.length !== 3) throw new SetRefused('invalid_request', 'The SET is not a compact JWS', { cause: `${parts.length} segments` })
    const header = decodeJson(parts[0])
    const payload = decodeJson(parts[1])
    if (header === undefined || payload === undefined) throw new SetRefused('invalid_request', 'The SET could not be parsed')
    const iss = payload.iss
    const transmitter = typeof iss === 'string' ? this.#byIssuer.get(iss) : undefined
    const fits = via.kind === 'push' ? transmitter?.config.delivery === 'push' : iss === via.issuer
    if (transmitter === undefined || !fits) {
      throw new SetRefused('invalid_issuer', 'The SET issuer is not a configured transmitter')
    }
    const config = transmitter.config
    const alg = header.alg
    if (typeof alg !== 'string' || !config.algorithms.includes(alg)) {
      throw new SetRefused('invalid_key', 'The SET is signed with an algorithm not accepted from this transmitter', { cause: `alg ${String(alg)}` })
    }
    for (const name of KEY_LOCATION_HEADERS) {
      if (header[name] !== undefined) throw new SetRefused('invalid_key', 'The SET names its own key; keys come only from the jwks_uri', { cause: name })
    }
    if (header.crit !== undefined) throw new SetRefused('invalid_request', 'The SET has critical header parameters', { cause: 'crit' })
    if (header.typ !== undefined && header.typ !== 'secevent+jwt' && header.typ !== 'application/secevent+jwt') {
      throw new SetRefused('invalid_request', 'The SET has a typ other than secevent+jwt', { cause: `typ ${String(header.typ)}` })
    }
    const kid = header.kid
    if (kid !== undefined && typeof kid !== 'string') throw new SetRefused('invalid_key', 'The SET kid is not a string')

    let key: Awaited<ReturnType<TransmitterKeys['keys']['resolve']>>
    try {
      key = await transmitter.keys.resolve(kid, alg, null)
    } catch (err) {
      // The JWKS client's TemporarilyUnavailable: our failure to load keys, not the transmitter's SET.
      if (err instanceof OAuthError) {
        throw new SetRefused('invalid_key', "The transmitter's keys cannot be loaded; try again later", { cause: err, status: 503 })
      }
      throw err
    }
    if (key === undefined) throw new SetRefused('invalid_key', 'No key of the transmitter verifies the SET', { cause: `kid ${String(kid)}` })

    const { clock, clockSkewSec, maxAgeSec } = this.#options
    let claims: JWTPayload
    try {
      const result = await jwtVerify(token, key.key, {
        algorithms: config.algorithms,
        issuer: config.issuer,
        audience: config.audience,
        clockTolerance: clockSkewSec,
        requiredClaims: ['iat', 'jti'],
        crit: {},
        currentDate: new Date(clock.now()),
      })
      claims = result.payload
    } catch (err) {
      if (err instanceof joseErrors.JWSSignatureVerificationFailed) throw new SetRefused('invalid_key', 'The SET signature does not verify', { cause: err })
      if (err instanceof joseErrors.JWTClaimValidationFailed && err.claim === 'aud') {
        throw new SetRefused('invalid_audience', 'The SET is meant for another audience', { cause: err })
      }
      throw new SetRefused('invalid_request', 'The SET claims are not valid', { cause: err })
    }
    const now = clock.now() / 1000
    const iat = claims.iat
    if (typeof iat !== 'number' || iat > now + clockSkewSec) throw new SetRefused('invalid_request', 'The SET iat is in the future')
    if (iat < now - maxAgeSec) throw new SetRefused('invalid_request', 'The SET is older than bearward remembers SETs for', { cause: `iat ${iat}` })
    const jti = claims.jti
    if (typeof jti !== 'string' || jti.length === 0 || jti.length > MAX_JTI) throw new SetRefused('invalid_request', 'The SET jti is not a usable identifier')
    const events = claims.events
    if (!isObject(events)) throw new SetRefused('invalid_request', 'The SET has no events claim')
    const entries = Object.entries(events)
    if (entries.length === 0 || entries.length > MAX_EVENTS) throw new SetRefused('invalid_request', 'The SET events claim is empty or too large')
    const checked: Record<string, Readonly<Record<string, unknown>>> = {}
    for (const [uri, body] of entries) {
      if (!isObject(body)) throw new SetRefused('invalid_request', 'A SET event is not a JSON object')
      checked[uri] = body
    }
    return { transmitter: config, jti, iat, claims, events: checked }
  }
}
