import { randomBytes, scrypt as scryptCb, timingSafeEqual, createHash, type ScryptOptions } from 'node:crypto'

/**
 * Secret and password hashes, in one self-describing format accepted by both
 * `secret_hash` and `password_hash`:
 *
 *     scrypt$N$r$p$<salt base64url>$<hash base64url>
 *
 * Passwords are low-entropy and need the work factor. Client secrets minted by
 * `bearward hash-secret` are 256-bit random values, which no work factor makes
 * stronger; so verification caches a successful check (keyed by a SHA-256 of
 * hash+secret) and a client_credentials call costs one scrypt per secret per
 * process, not one per request (the bcrypt cap of ory/hydra#1477).
 */

const PREFIX = 'scrypt'
const DEFAULT = { N: 16384, r: 8, p: 1, keyLen: 32 }

function scrypt(secret: string, salt: Buffer, keyLen: number, o: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCb(secret, salt, keyLen, o, (err, key) => (err ? reject(err) : resolve(key)))
  })
}

export interface ParsedHash {
  N: number
  r: number
  p: number
  salt: Buffer
  hash: Buffer
}

/** Parse a stored hash; null when it is not in our format. */
export function parseSecretHash(stored: string): ParsedHash | null {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== PREFIX) return null
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0)) return null
  if ((N & (N - 1)) !== 0 || N < 1024 || N > 1 << 20 || r > 32 || p > 16) return null
  const salt = Buffer.from(parts[4] ?? '', 'base64url')
  const hash = Buffer.from(parts[5] ?? '', 'base64url')
  if (salt.length < 8 || hash.length < 16) return null
  return { N, r, p, salt, hash }
}

/** Hash a secret or password for the config (`bearward hash-secret`). */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16)
  const { N, r, p, keyLen } = DEFAULT
  const hash = await scrypt(secret, salt, keyLen, { N, r, p, maxmem: 64 * 1024 * 1024 })
  return [PREFIX, N, r, p, salt.toString('base64url'), hash.toString('base64url')].join('$')
}

/** A fresh 256-bit client secret, base64url (43 characters). */
export function generateClientSecret(): string {
  return randomBytes(32).toString('base64url')
}

/**
 * Verifies secrets against stored hashes in constant time. Remembers verified
 * pairs (bounded) so a repeat costs a SHA-256 instead of an scrypt; failures
 * are never cached, so guessing stays at full price.
 */
export class SecretVerifier {
  readonly #verified = new Map<string, true>()
  /** Checks under way, so a burst of first requests with one secret costs one scrypt. */
  readonly #pending = new Map<string, Promise<boolean>>()
  readonly #max: number
  #scryptRuns = 0

  constructor(maxEntries = 1024) {
    this.#max = maxEntries
  }

  /** How many scrypt computations this verifier has run (observability and tests). */
  get scryptRuns(): number {
    return this.#scryptRuns
  }

  async verify(secret: string, stored: string): Promise<boolean> {
    const parsed = parseSecretHash(stored)
    if (parsed === null) return false
    const memoKey = createHash('sha256').update(stored).update('\0').update(secret).digest('base64url')
    if (this.#verified.has(memoKey)) return true
    const inFlight = this.#pending.get(memoKey)
    if (inFlight) return inFlight
    const check = this.#compute(secret, parsed, memoKey).finally(() => this.#pending.delete(memoKey))
    this.#pending.set(memoKey, check)
    return check
  }

  async #compute(secret: string, parsed: ParsedHash, memoKey: string): Promise<boolean> {
    this.#scryptRuns++
    const candidate = await scrypt(secret, parsed.salt, parsed.hash.length, {
      N: parsed.N,
      r: parsed.r,
      p: parsed.p,
      maxmem: 256 * parsed.N * parsed.r + 1024 * 1024,
    })
    const ok = candidate.length === parsed.hash.length && timingSafeEqual(candidate, parsed.hash)
    if (ok) {
      if (this.#verified.size >= this.#max) {
        const oldest = this.#verified.keys().next().value
        if (oldest !== undefined) this.#verified.delete(oldest)
      }
      this.#verified.set(memoKey, true)
    }
    return ok
  }
}

/**
 * A well-formed hash of a random secret, to verify against when the client or
 * user does not exist, so response time does not reveal which names exist.
 */
export const DUMMY_HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'

/** Constant-time string comparison (for CSRF tokens, state, etc.). */
export function safeEqual(a: string, b: string): boolean {
  const ab = createHash('sha256').update(a).digest()
  const bb = createHash('sha256').update(b).digest()
  return timingSafeEqual(ab, bb) && a.length === b.length
}
