/**
 * The JWS part of a DPoP proof (RFC 9449 4.2, 4.3 checks 2-7): a compact JWS
 * whose protected header carries the public key that signed it (`jwk`).
 *
 * Verified with `node:crypto` directly rather than jose's `EmbeddedJWK`: a
 * proof arrives with every request, and a cached KeyObject with one
 * `crypto.verify` costs a fraction of importing the key and verifying
 * through jose (docs/performance.md, "DPoP proofs are verified with
 * node:crypto"). A client signs every proof with the same key, so
 * the imported key is cached by the header segment (which holds it). The
 * checks are the ones jose would make: strict base64url, a JSON object
 * header, the algorithm from our allow-list and fitting the key's type, no
 * `crit`, and a signature of the exact length the algorithm produces.
 */
import { constants, createPublicKey, verify, type KeyObject } from 'node:crypto'
import { algFitsKey } from '../tokens/verify-jwt.js'
import { jwkThumbprint } from './thumbprint.js'

/** Every algorithm a proof may be signed with (asymmetric only: never `none`, never HS*). */
export const PROOF_ALGORITHMS = ['ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512'] as const
export type ProofAlgorithm = (typeof PROOF_ALGORITHMS)[number]

/** JWK members that belong to a private or symmetric key (RFC 7518 6.2.2, 6.3.2, 6.4.1). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const

/** RFC 7518 3.3, 3.5: RSA keys of fewer than 2048 bits are refused. */
const MIN_RSA_BITS = 2048

const SEGMENT = /^[A-Za-z0-9_-]+$/

interface AlgSpec {
  /** node:crypto digest, null for EdDSA. */
  readonly hash: 'sha256' | 'sha384' | 'sha512' | null
  readonly pss: boolean
  /** Exact signature length in bytes (ECDSA in IEEE P1363 form), or null when it follows the key. */
  readonly sigBytes: number | null
}

const SPECS: Readonly<Record<ProofAlgorithm, AlgSpec>> = {
  ES256: { hash: 'sha256', pss: false, sigBytes: 64 },
  ES384: { hash: 'sha384', pss: false, sigBytes: 96 },
  ES512: { hash: 'sha512', pss: false, sigBytes: 132 },
  EdDSA: { hash: null, pss: false, sigBytes: null },
  Ed25519: { hash: null, pss: false, sigBytes: 64 },
  RS256: { hash: 'sha256', pss: false, sigBytes: null },
  RS384: { hash: 'sha384', pss: false, sigBytes: null },
  RS512: { hash: 'sha512', pss: false, sigBytes: null },
  PS256: { hash: 'sha256', pss: true, sigBytes: null },
  PS384: { hash: 'sha384', pss: true, sigBytes: null },
  PS512: { hash: 'sha512', pss: true, sigBytes: null },
}

/** Why a proof's JWS is refused; the verifier turns it into invalid_dpop_proof. */
export class ProofRejected extends Error {
  /** Stable code for logs and tests (jose style). */
  readonly code: string
  constructor(code: string, message: string) {
    super(message)
    this.name = 'ProofRejected'
    this.code = code
  }
}

function reject(code: string, message: string): never {
  throw new ProofRejected(code, message)
}

function decodeObject(segment: string, what: string): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'))
  } catch {
    reject('ERR_DPOP_MALFORMED', `${what} is not JSON`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) reject('ERR_DPOP_MALFORMED', `${what} is not a JSON object`)
  return value as Record<string, unknown>
}

/** The proof key as imported from a header: reused for every proof the client signs with it. */
export interface ProofKey {
  readonly alg: ProofAlgorithm
  readonly key: KeyObject
  /** RFC 7638 SHA-256 thumbprint of the public key. */
  readonly jkt: string
}

/** A proof whose signature holds: its key and its (not yet checked) claims. */
export interface SignedProof {
  readonly key: ProofKey
  readonly claims: Record<string, unknown>
}

/**
 * Import the key a protected header carries, after the header checks of RFC
 * 9449 4.3: `typ` is `dpop+jwt`, `alg` allowed, `jwk` a public key of a type
 * that fits `alg`, no `crit`.
 */
export function importHeaderKey(headerSegment: string, allowed: ReadonlySet<string>): ProofKey {
  const header = decodeObject(headerSegment, 'protected header')
  if (header.typ !== 'dpop+jwt') reject('ERR_DPOP_TYP', 'typ is not dpop+jwt')
  const alg = header.alg
  if (typeof alg !== 'string' || !allowed.has(alg) || !(alg in SPECS)) reject('ERR_DPOP_ALG', 'alg not allowed')
  if (header.crit !== undefined) reject('ERR_DPOP_CRIT', 'crit is not supported')
  const jwk = header.jwk
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) reject('ERR_DPOP_JWK', 'jwk missing or not an object')
  const members = jwk as Record<string, unknown>
  for (const name of PRIVATE_MEMBERS) {
    if (members[name] !== undefined) reject('ERR_DPOP_JWK_PRIVATE', `jwk holds private member ${name}`)
  }
  const jkt = jwkThumbprint(members)
  if (jkt === undefined) reject('ERR_DPOP_JWK', 'jwk is not a public EC, RSA or OKP key')
  let key: KeyObject
  try {
    key = createPublicKey({ key: members as import('node:crypto').JsonWebKey, format: 'jwk' })
  } catch {
    reject('ERR_DPOP_JWK', 'jwk does not import')
  }
  const spec = alg as ProofAlgorithm
  if (!algFitsKey(spec, key)) reject('ERR_DPOP_ALG', 'alg does not fit the jwk')
  if (key.asymmetricKeyType === 'rsa' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < MIN_RSA_BITS) reject('ERR_DPOP_JWK', 'RSA key shorter than 2048 bits')
  return { alg: spec, key, jkt }
}

/** Check the signature over `header.payload` with `key`. */
export function signatureHolds(key: ProofKey, signingInput: string, signature: Buffer): boolean {
  const spec = SPECS[key.alg]
  if (spec.sigBytes !== null && signature.length !== spec.sigBytes) return false
  const data = Buffer.from(signingInput, 'latin1')
  try {
    if (spec.pss) {
      return verify(spec.hash, data, { key: key.key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }, signature)
    }
    if (spec.sigBytes !== null && spec.hash !== null) return verify(spec.hash, data, { key: key.key, dsaEncoding: 'ieee-p1363' }, signature)
    return verify(spec.hash, data, key.key, signature)
  } catch {
    return false
  }
}

/** Bounded memo of imported keys by header segment (FIFO: a full memo forgets its oldest entry). */
export class ProofKeyCache {
  readonly #max: number
  readonly #keys = new Map<string, ProofKey>()

  constructor(maxEntries: number) {
    this.#max = maxEntries
  }

  get(headerSegment: string): ProofKey | undefined {
    return this.#keys.get(headerSegment)
  }

  set(headerSegment: string, key: ProofKey): void {
    if (this.#max <= 0) return
    if (this.#keys.size >= this.#max) {
      const oldest = this.#keys.keys().next().value
      if (oldest !== undefined) this.#keys.delete(oldest)
    }
    this.#keys.set(headerSegment, key)
  }
}

/**
 * Split and verify a compact JWS proof. The key comes from the cache when
 * this exact header was seen with a valid signature before; a header is
 * cached only after its signature held, so junk cannot fill the cache.
 */
export function verifyProofJws(proof: string, allowed: ReadonlySet<string>, cache: ProofKeyCache): SignedProof {
  const first = proof.indexOf('.')
  const second = first === -1 ? -1 : proof.indexOf('.', first + 1)
  if (second === -1 || proof.indexOf('.', second + 1) !== -1) reject('ERR_DPOP_MALFORMED', 'not a compact JWS')
  const headerSegment = proof.slice(0, first)
  const payloadSegment = proof.slice(first + 1, second)
  const signatureSegment = proof.slice(second + 1)
  if (!SEGMENT.test(headerSegment) || !SEGMENT.test(payloadSegment) || !SEGMENT.test(signatureSegment)) {
    reject('ERR_DPOP_MALFORMED', 'a segment is not base64url')
  }
  const cached = cache.get(headerSegment)
  // A cached key was imported from this very header, under an allow-list that
  // may have been narrower or wider; the alg is re-checked against today's.
  const key = cached !== undefined && allowed.has(cached.alg) ? cached : importHeaderKey(headerSegment, allowed)
  if (!signatureHolds(key, proof.slice(0, second), Buffer.from(signatureSegment, 'base64url'))) {
    reject('ERR_DPOP_SIGNATURE', 'signature does not verify')
  }
  if (cached === undefined) cache.set(headerSegment, key)
  return { key, claims: decodeObject(payloadSegment, 'payload') }
}
