/**
 * DPoP proof validation (RFC 9449 4.3), used by both faces: the token
 * endpoint and UserInfo of the authorization server, and the gateway's
 * routes. One verifier per Runtime and face; the face only decides the
 * status of a refusal (400 at the token endpoint, 401 with a DPoP
 * challenge at a resource).
 *
 * The checks, in order: exactly one `DPoP` header; a compact JWS with `typ`
 * `dpop+jwt`, an allowed asymmetric `alg`, a public `jwk` and a valid
 * signature (`jws.ts`); `jti`, `htm`, `htu`, `iat` present; `htm` equal to
 * the method; `htu` equal to the request URI without query (normalised);
 * `iat` no older than `iat_window` and no further ahead than `iat_leeway`;
 * `ath` equal to the hash of the access token presented with it; the key's
 * thumbprint equal to the one the token or code is bound to; the server
 * nonce when nonces are on; and last, the `jti` never seen before (the
 * replay cache in the store). A refusal changes no state: the `jti` is only
 * recorded once every other check passed.
 */
import type { IncomingMessage } from 'node:http'
import type { Clock } from '../clock.js'
import type { DpopConfig } from '../config/validated-config.js'
import { InvalidDpopProof, UseDpopNonce } from '../errors.js'
import { headerCount } from '../http/header-count.js'
import type { Store } from '../store/types.js'
import { htuMatches } from './htu.js'
import { ProofKeyCache, ProofRejected, type SignedProof, verifyProofJws } from './jws.js'
import { DpopNonces } from './nonce.js'
import { firstUse, MAX_JTI_LENGTH } from './replay.js'
import { accessTokenHash } from './thumbprint.js'

/** A proof longer than this is refused before parsing (an RSA-4096 proof is ~1.5 kB). */
const MAX_PROOF_LENGTH = 8192

/** Imported proof keys kept per verifier (one per client key in use). */
const KEY_CACHE_ENTRIES = 10_000

/** What the proof must match. */
export interface ProofExpectations {
  /** The request method (`htm`). */
  readonly method: string
  /** The request URI without query or fragment (`htu`). */
  readonly url: string
  /** The access token presented with the proof; its hash must be the proof's `ath` (RFC 9449 4.2). */
  readonly accessToken?: string
  /** The thumbprint the proof key must have: the token's `cnf.jkt` or the code's `dpop_jkt`. */
  readonly jkt?: string
}

/** A proof that passed every check. */
export interface VerifiedProof {
  /** SHA-256 thumbprint of the proof key (what tokens get bound to). */
  readonly jkt: string
}

export type ProofFace = 'token' | 'resource'

/**
 * The one `DPoP` request header, or null when there is none. Node joins
 * repeated headers it does not know with `, `, so the raw headers are
 * counted: two proofs are refused (RFC 9449 4.3 check 1), never merged.
 */
export function proofHeader(req: IncomingMessage, face: ProofFace): string | null {
  const value = req.headers.dpop
  if (value === undefined) return null
  if (headerCount(req, 'dpop') !== 1 || typeof value !== 'string') {
    throw new InvalidDpopProof('Exactly one DPoP header is allowed', { resource: face === 'resource', cause: 'repeated DPoP header' })
  }
  return value
}

export class DpopVerifier {
  /** Accepted algorithms, for metadata and the `algs` challenge attribute. */
  readonly algorithms: readonly string[]
  readonly #allowed: ReadonlySet<string>
  readonly #config: DpopConfig
  readonly #clock: Clock
  readonly #store: Pick<Store, 'singleUse'>
  readonly #resource: boolean
  readonly #keys = new ProofKeyCache(KEY_CACHE_ENTRIES)
  readonly #nonces: DpopNonces | null
  /** `algs` of the DPoP challenge (RFC 9449 7.1), precomputed. */
  readonly #algs: string

  constructor(config: DpopConfig, deps: { clock: Clock; store: Pick<Store, 'singleUse'> }, face: ProofFace) {
    this.#config = config
    this.algorithms = Object.freeze([...config.algs])
    this.#allowed = new Set(config.algs)
    this.#clock = deps.clock
    this.#store = deps.store
    this.#resource = face === 'resource'
    this.#algs = config.algs.join(' ')
    this.#nonces = config.nonce === null ? null : new DpopNonces(config.nonce.secret, config.nonce.ttlSec, deps.clock)
  }

  /** The nonce to hand out in `DPoP-Nonce`, or null when nonces are off. */
  nonce(): string | null {
    return this.#nonces?.current() ?? null
  }

  #refuse(description: string, cause: string): InvalidDpopProof {
    return new InvalidDpopProof(description, { resource: this.#resource, cause, algs: this.#algs })
  }

  /**
   * Every check but the replay cache, synchronously: what a refusal is
   * decided by. Returns the key's thumbprint and how long the `jti` must be
   * remembered.
   */
  check(proof: string, expect: ProofExpectations): { jkt: string; jti: string; ttlSec: number } {
    if (proof.length > MAX_PROOF_LENGTH) throw this.#refuse('The DPoP proof is too large', 'proof too large')
    let signed: SignedProof
    try {
      signed = verifyProofJws(proof, this.#allowed, this.#keys)
    } catch (err) {
      if (err instanceof ProofRejected) throw this.#refuse('The DPoP proof is malformed or its signature is invalid', err.code)
      throw err
    }
    const { claims, key } = signed
    const { jti, htm, htu, iat } = claims
    if (typeof jti !== 'string' || jti === '' || jti.length > MAX_JTI_LENGTH) throw this.#refuse('The DPoP proof needs a jti', 'jti missing or too long')
    if (typeof htm !== 'string' || typeof htu !== 'string' || typeof iat !== 'number' || !Number.isFinite(iat)) {
      throw this.#refuse('The DPoP proof needs htm, htu and iat', 'claim missing or of the wrong type')
    }
    if (htm !== expect.method) throw this.#refuse('The DPoP proof was made for another HTTP method', 'htm mismatch')
    if (!htuMatches(htu, expect.url)) throw this.#refuse('The DPoP proof was made for another URI', 'htu mismatch')
    const nowSec = this.#clock.now() / 1000
    if (iat < nowSec - this.#config.iatWindowSec) throw this.#refuse('The DPoP proof is too old', 'iat too old')
    if (iat > nowSec + this.#config.iatLeewaySec) throw this.#refuse('The DPoP proof is issued in the future', 'iat in the future')
    if (expect.accessToken !== undefined) {
      if (typeof claims.ath !== 'string') throw this.#refuse('The DPoP proof needs ath, the hash of the access token', 'ath missing')
      if (claims.ath !== accessTokenHash(expect.accessToken)) throw this.#refuse('The DPoP proof was made for another access token', 'ath mismatch')
    }
    if (expect.jkt !== undefined && key.jkt !== expect.jkt) {
      throw this.#refuse('The DPoP proof is signed by a key the token is not bound to', 'jkt mismatch')
    }
    if (this.#nonces !== null && !this.#nonces.accepts(claims.nonce)) {
      throw new UseDpopNonce(this.#nonces.current(), {
        resource: this.#resource,
        algs: this.#algs,
        cause: claims.nonce === undefined ? 'nonce missing' : 'nonce stale or unknown',
      })
    }
    // Remembered until the proof would be too old anyway (plus a second for rounding).
    return { jkt: key.jkt, jti, ttlSec: Math.ceil(iat + this.#config.iatWindowSec - nowSec) + 1 }
  }

  /**
   * Validate `proof` for a request; resolves with its key's thumbprint.
   * Rejects with InvalidDpopProof / UseDpopNonce, or StoreUnavailableError
   * when the replay cache cannot be asked (callers fail closed).
   * @see https://www.rfc-editor.org/rfc/rfc9449#section-4.3
   */
  async verify(proof: string, expect: ProofExpectations): Promise<VerifiedProof> {
    const checked = this.check(proof, expect)
    if (!(await firstUse(this.#store, checked.jkt, checked.jti, checked.ttlSec))) {
      throw this.#refuse('The DPoP proof has been used before', 'jti replayed')
    }
    return { jkt: checked.jkt }
  }
}
