/**
 * The hook every change of a person's sign-in factors goes through (a passkey
 * added or removed, an authenticator app turned on or off, a password set
 * through an admin's password link): a listener list
 * owned by the Runtime's authorization server (AsContext.credentialChanges).
 * The Shared Signals transmitter subscribes (CAEP credential-change). A
 * listener that throws or rejects is logged; it never fails the person's page.
 */

/** CAEP 1.0 credential-change `credential_type` values bearward's factors map to. */
export type CredentialType = 'fido2-platform' | 'fido2-roaming' | 'app' | 'password'
/** CAEP 1.0 credential-change `change_type`. */
export type CredentialChangeType = 'create' | 'revoke' | 'update' | 'delete'

export interface CredentialChange {
  readonly sub: string
  readonly credentialType: CredentialType
  readonly changeType: CredentialChangeType
  /** A name the person gave it (a passkey's), for the event's `friendly_name`. */
  readonly friendlyName?: string
}

export type CredentialChangeListener = (change: CredentialChange) => void | Promise<void>

interface HookLog {
  error(obj: object, msg: string): void
}

export class CredentialChanges {
  readonly #listeners = new Set<CredentialChangeListener>()
  readonly #log: HookLog

  constructor(log: HookLog) {
    this.#log = log
  }

  /** Subscribe; returns the unsubscribe. */
  on(listener: CredentialChangeListener): () => void {
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }

  /** Tell every listener; resolves when all have settled (never rejects). */
  async emit(change: CredentialChange): Promise<void> {
    await Promise.all(
      [...this.#listeners].map(async (l) => {
        try {
          await l(change)
        } catch (err) {
          this.#log.error({ event: 'credential_change_listener_failed', err }, 'a listener of credential changes failed')
        }
      }),
    )
  }
}

/** A passkey's CAEP credential type: a roaming authenticator reports usb/nfc/ble; anything else is the platform's. */
export function passkeyCredentialType(transports: readonly string[]): CredentialType {
  return transports.some((t) => t === 'usb' || t === 'nfc' || t === 'ble') ? 'fido2-roaming' : 'fido2-platform'
}
