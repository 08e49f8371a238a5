/**
 * Authenticator-app secrets at rest: the store holds each person's shared
 * secret sealed (src/crypto/sealed.ts, AES-256-GCM) with the record's key
 * (`totp:<sub>`) as additional data, so reading the store is not enough to
 * mint codes, and a sealed secret copied onto another person opens nowhere.
 *
 * The keys: `authorization_server.mfa.totp_encryption_key` (then
 * `totp_previous_keys`, which only open), or when none is configured, keys
 * derived with HKDF from the signing keys' private parts (the first seals).
 * A secret sealed by an older key, or stored plain by a version before
 * sealing, is read and sealed again with the current key the next time the
 * person signs in with a code (docs/people.md).
 */
import type { AuthorizationServerConfig } from '../../config/validated-config.js'
import { Sealer, sealingKey, type UnsealFailure } from '../../crypto/sealed.js'
import type { KeySet } from '../../keys/keyset.js'
import type { Logger } from '../../log.js'
import type { TotpRecord } from '../../store/types.js'

/** HKDF info: keys made for this never seal anything else. */
const PURPOSE = 'totp secret v1'
/** What newTotpSecret writes: base32 without padding (a record from before sealing holds this as is). */
const PLAIN_SECRET = /^[A-Z2-7]{16,}$/

export type RevealedSecret = { ok: true; secret: string; stale: boolean } | { ok: false; reason: UnsealFailure }

export class TotpSecrets {
  readonly #sealer: Sealer

  constructor(sealer: Sealer) {
    this.#sealer = sealer
  }

  /** The configured keys, or keys derived from every signing key (built once per Runtime). */
  static fromConfig(as: AuthorizationServerConfig, keys: KeySet): TotpSecrets {
    const configured = as.mfa?.totpEncryptionKeys ?? []
    if (configured.length > 0) return new TotpSecrets(new Sealer(configured.map((k) => sealingKey(k, PURPOSE))))
    const material = keys.all.map((k) => Buffer.from(String(k.privateKey.export({ format: 'jwk' }).d), 'base64url'))
    return new TotpSecrets(new Sealer(material.map((m) => sealingKey(m, PURPOSE))))
  }

  /** `secret` as the store keeps it for `sub`. */
  seal(sub: string, secret: string): string {
    return this.#sealer.seal(secret, additionalData(sub))
  }

  /** The plain secret of `sub`'s stored value; `stale` when it should be sealed again (plain, or an older key's). */
  reveal(sub: string, stored: string): RevealedSecret {
    if (!Sealer.isSealed(stored)) return PLAIN_SECRET.test(stored) ? { ok: true, secret: stored, stale: true } : { ok: false, reason: 'malformed' }
    const opened = this.#sealer.open(stored, additionalData(sub))
    return opened.ok ? { ok: true, secret: opened.plain, stale: !opened.current } : opened
  }

  /**
   * The plain secret of `record`, or null when it cannot be read: logged, and
   * the caller refuses (a code is never checked against anything else).
   */
  secretOf(log: Logger, sub: string, record: TotpRecord): { secret: string; stale: boolean } | null {
    const revealed = this.reveal(sub, record.secret)
    if (!revealed.ok) {
      log.error(
        { event: 'totp_secret_unreadable', sub, reason: revealed.reason },
        'an authenticator-app secret could not be opened: is mfa.totp_encryption_key (or a previous key) the one it was sealed with?',
      )
      return null
    }
    if (!Sealer.isSealed(record.secret))
      log.warn({ event: 'totp_secret_plain', sub }, 'an authenticator-app secret was stored unsealed; it is sealed at its next use')
    return { secret: revealed.secret, stale: revealed.stale }
  }
}

function additionalData(sub: string): string {
  return `totp:${sub}`
}
