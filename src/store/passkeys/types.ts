/** A person's passkey (WebAuthn public-key credential), kept until they remove it. */
export interface PasskeyRecord {
  /** The credential id, base64url (unique across people). */
  credentialId: string
  sub: string
  /** The local username the passkey signs in (checked against the config with `sub`). */
  username: string
  /** What the person called it ("Work laptop"). */
  name: string
  /** COSE public key, base64url. */
  publicKey: string
  /** The authenticator's signature counter as last seen (0: the authenticator keeps none). */
  counter: number
  /** Transports the browser reported (`internal`, `hybrid`, `usb`, ...), passed back as hints. */
  transports: string[]
  /** `multiDevice`: a synced passkey; `singleDevice`: bound to one authenticator. */
  deviceType: 'singleDevice' | 'multiDevice'
  /** The backup state flag as last seen. */
  backedUp: boolean
  /** Epoch seconds it was added. */
  createdAt: number
  /** Epoch seconds of its latest sign-in, or null. */
  lastUsedAt: number | null
}

/** A WebAuthn challenge handed to a page, kept under its hash until used once or expired. */
export interface PasskeyChallengeRecord {
  /** `register`: the account page adds a passkey for `sub`; `sign-in`: the login page; `second-factor`: after `sub`'s password. */
  purpose: 'register' | 'sign-in' | 'second-factor'
  /** The person a registration or a second factor is for; null for a sign-in. */
  sub: string | null
  /** Epoch seconds. */
  expiresAt: number
}

/** The outcome of a passkey sign-in's counter check; see PasskeyStore.use. */
export type PasskeyUseResult = 'used' | 'regressed' | 'missing'

/** Passkeys (WebAuthn) and the challenges handed to pages. */
export interface PasskeyStore {
  /** Keep a challenge under its hash for `ttlSec`. */
  putChallenge(challengeHash: string, record: PasskeyChallengeRecord, ttlSec: number): Promise<void>
  /** Atomic get-and-delete: a challenge is answered once; null when unknown, used or expired. */
  takeChallenge(challengeHash: string): Promise<PasskeyChallengeRecord | null>
  /** Add a passkey; false (nothing stored) when its credential id is already registered, to anyone. */
  add(record: PasskeyRecord): Promise<boolean>
  /** The passkey with this credential id, or null. */
  get(credentialId: string): Promise<PasskeyRecord | null>
  /** Every passkey of `sub`, oldest first. */
  list(sub: string): Promise<PasskeyRecord[]>
  /** Give `sub`'s passkey a new name; false when `sub` has none with this id (a removed one stays removed). */
  rename(sub: string, credentialId: string, name: string): Promise<boolean>
  /** Remove `sub`'s passkey; false when `sub` has none with this id (someone else's is untouched). */
  remove(sub: string, credentialId: string): Promise<boolean>
  /**
   * Atomic: record a sign-in whose authenticator reported `counter`. When either the stored or the new
   * counter is non-zero, the new one must be greater: otherwise `regressed` and nothing changes (a cloned
   * authenticator, or a replayed assertion racing the first). `missing` when the passkey was removed.
   */
  use(sub: string, credentialId: string, use: { counter: number; backedUp: boolean; at: number }): Promise<PasskeyUseResult>
}
