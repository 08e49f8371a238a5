import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto'

/**
 * Small secrets sealed at rest with AES-256-GCM: a random 96-bit nonce per
 * value (NIST SP 800-38D 8.2.2, so no nonce repeats under one key in any
 * realistic number of records), and additional data the caller names (the
 * record's key), so a sealed value copied under another record does not open.
 *
 * Sealed form: `sealed.v1.<key id>.<nonce>.<ciphertext><tag>`, parts in
 * base64url. The key id names which key sealed it, so rotation needs no
 * trial decryption: the first key seals, every key opens.
 *
 * @see https://www.rfc-editor.org/rfc/rfc5116#section-5.1
 */

const PREFIX = 'sealed.v1.'
const NONCE_BYTES = 12
const TAG_BYTES = 16

/** An AES-256 key and the id stored beside what it sealed. */
export interface SealingKey {
  readonly id: string
  readonly key: Buffer
}

/**
 * A 256-bit key for `purpose` derived with HKDF-SHA-256 from configured
 * material (a long random string, or a signing key's private bytes), so one
 * secret never serves two purposes as is. The id is a hash of the derived
 * key: it tells keys apart and reveals nothing of them.
 *
 * @see https://www.rfc-editor.org/rfc/rfc5869#section-2
 */
export function sealingKey(material: string | Buffer, purpose: string): SealingKey {
  const ikm = typeof material === 'string' ? Buffer.from(material, 'utf8') : material
  const key = Buffer.from(hkdfSync('sha256', ikm, Buffer.alloc(0), `bearward ${purpose}`, 32))
  const id = createHash('sha256').update(key).digest().subarray(0, 9).toString('base64url')
  return { id, key }
}

/** Why a sealed value did not open. */
export type UnsealFailure = 'malformed' | 'unknown_key' | 'not_authentic'

export type Unsealed = { ok: true; plain: string; current: boolean } | { ok: false; reason: UnsealFailure }

/** Seals with the first key, opens with any of them. */
export class Sealer {
  readonly #current: SealingKey
  readonly #byId: ReadonlyMap<string, SealingKey>

  constructor(keys: readonly SealingKey[]) {
    const first = keys[0]
    if (first === undefined) throw new Error('a sealer needs at least one key')
    this.#current = first
    this.#byId = new Map(keys.map((k) => [k.id, k]))
  }

  /** Whether `value` is in the sealed form (anything else was stored before sealing). */
  static isSealed(value: string): boolean {
    return value.startsWith(PREFIX)
  }

  seal(plain: string, additionalData: string): string {
    const nonce = randomBytes(NONCE_BYTES)
    const cipher = createCipheriv('aes-256-gcm', this.#current.key, nonce, { authTagLength: TAG_BYTES })
    cipher.setAAD(Buffer.from(additionalData, 'utf8'))
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()])
    return `${PREFIX}${this.#current.id}.${nonce.toString('base64url')}.${body.toString('base64url')}`
  }

  /** The plain value, and whether the current key sealed it (else it is due a re-seal); never throws. */
  open(sealed: string, additionalData: string): Unsealed {
    if (!Sealer.isSealed(sealed)) return { ok: false, reason: 'malformed' }
    const parts = sealed.slice(PREFIX.length).split('.')
    if (parts.length !== 3) return { ok: false, reason: 'malformed' }
    const [id, nonceText, bodyText] = parts as [string, string, string]
    const key = this.#byId.get(id)
    if (key === undefined) return { ok: false, reason: 'unknown_key' }
    const nonce = Buffer.from(nonceText, 'base64url')
    const body = Buffer.from(bodyText, 'base64url')
    if (nonce.length !== NONCE_BYTES || body.length < TAG_BYTES) return { ok: false, reason: 'malformed' }
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.key, nonce, { authTagLength: TAG_BYTES })
      decipher.setAAD(Buffer.from(additionalData, 'utf8'))
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES))
      const plain = Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8')
      return { ok: true, plain, current: key.id === this.#current.id }
    } catch {
      // GCM's tag check failed: another record's value, a changed byte, or a different key under a clashing id.
      return { ok: false, reason: 'not_authentic' }
    }
  }
}
