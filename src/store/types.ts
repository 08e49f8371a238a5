/**
 * The state bearward keeps, behind one interface with two implementations:
 * `memory.ts` (embedded, single instance) and `redis.ts` (shared). Both pass
 * `test/store/contract.ts`.
 *
 * Conventions:
 * - Every token value (code, refresh token, opaque access token, device code)
 *   reaches the store only as `hashToken(value)` (SHA-256, base64url).
 * - Expiry is judged against the injected Clock in both implementations: the
 *   Redis store passes "now" into its scripts and compares it with times kept
 *   in the records; Redis TTLs only collect garbage. So tests move a
 *   ManualClock instead of sleeping, against a real Redis.
 * - Every method rejects with `StoreUnavailableError` when the backing store
 *   cannot be reached; none hangs longer than the configured command timeout.
 * - Each state transition documented "atomic" is one Redis command or Lua script.
 */

/** An authorization code as issued by /authorize. */
export interface CodeRecord {
  clientId: string
  /** The redirect_uri sent in the authorization request, or null when it was omitted. */
  redirectUri: string | null
  /** The redirect URI actually used (registered one when omitted). */
  effectiveRedirectUri: string
  codeChallenge: string | null
  codeChallengeMethod: 'S256' | 'plain' | null
  scope: string
  sub: string
  /** Epoch seconds of the login. */
  authTime: number
  /** How the person signed in (src/as/sign-in-strength.ts); absent on codes stored by an older version. */
  amr?: string[]
  acr?: string
  nonce: string | null
  /** RFC 8707 resource, when requested. */
  resource: string | null
  /** Epoch seconds. */
  expiresAt: number
  /** RFC 9449 10: `dpop_jkt` of the authorization request; the token request's proof key must have it. */
  dpopJkt?: string
  /**
   * Epoch milliseconds the code was issued: a withdrawal of (sub, client) at or after it refuses the
   * exchange. Absent on codes stored by an older version (their issue time is derived from expiresAt).
   */
  issuedAtMs?: number
}

/** Result of takeCode: atomic Issued → Used. */
export type TakeCodeResult =
  | { status: 'taken'; record: CodeRecord }
  /** Already used: `grantId` is the grant created by the first exchange (null if it did not finish). */
  | { status: 'used'; record: CodeRecord; grantId: string | null }
  | { status: 'missing' }

/**
 * A grant: one user's authorization of one client for a scope, the root of a
 * refresh-token family. Every access token issued under it carries its id
 * (claim `grant_id`), so revoking the grant revokes them all.
 */
export interface GrantRecord {
  grantId: string
  clientId: string
  sub: string
  /** Scope granted at authorization; refreshes may narrow but never widen. */
  scope: string
  authTime: number
  /** How the person signed in: every token of the family keeps it (absent on grants of an older version). */
  amr?: string[]
  acr?: string
  resource: string | null
  /** Epoch seconds the family was created. */
  createdAt: number
  /** Epoch seconds when the family ends (refresh TTL from creation or last rotation). */
  expiresAt: number
  /** Latest exp of any access token issued under this grant (revocation must outlive it). */
  maxAccessExp: number
  /** RFC 9449 5: a public client's refresh tokens are bound to this DPoP key thumbprint. */
  jkt?: string
}

export type RotateResult =
  | { status: 'rotated'; grant: GrantRecord }
  /** A replaced token was presented: the family is now revoked (atomically). */
  | { status: 'reused'; grant: GrantRecord }
  | { status: 'missing' }

/** What a refresh-token hash is, for revocation and introspection. */
export interface RefreshLookup {
  grant: GrantRecord
  /** True for the family's current token; false for a replaced one. */
  current: boolean
  /** Epoch seconds this refresh token was issued. */
  issuedAt: number
}

/** An opaque access token's claims, stored under its hash. */
export interface OpaqueTokenRecord {
  iss: string
  sub: string
  aud: string[]
  clientId: string
  scope: string
  jti: string
  iat: number
  exp: number
  grantId: string | null
  /** RFC 9449 6: thumbprint of the DPoP key the token is bound to. */
  jkt?: string
  /** The person's claims released into the token (`access_token.claims`), answered by introspection. */
  claims?: Record<string, unknown>
  /** Epoch seconds of the person's sign-in, and how they signed in (absent for a client's own token). */
  authTime?: number
  amr?: string[]
  acr?: string
}

export type RevocationKind = 'jti' | 'grant'

/** One entry of the revocation list; `exp` = epoch seconds after which it can be forgotten. */
export interface RevocationEntry {
  kind: RevocationKind
  id: string
  exp: number
}

export type DeviceStatus = 'pending' | 'approved' | 'denied' | 'consumed'

export interface DeviceRecord {
  clientId: string
  /** Normalized user code (8 characters, upper case, no dash). */
  userCode: string
  scope: string
  status: DeviceStatus
  /** Set when approved. */
  sub: string | null
  authTime: number | null
  /** How the approving person signed in; absent until approved (and on records of an older version). */
  amr?: string[]
  acr?: string
  /** Epoch seconds. */
  expiresAt: number
  /** Current polling interval in seconds (grows by 5 on slow_down). */
  intervalSec: number
  /** Epoch milliseconds of the last poll, or 0. */
  lastPollMs: number
  /**
   * Epoch milliseconds the person approved it: a withdrawal of the client at or after it refuses the
   * grant. Absent until approved, and on records stored by an older version.
   */
  decidedAtMs?: number
}

/** A person's answer on the device page; an approval records who and how they signed in. */
export type DeviceDecision = { approved: true; sub: string; authTime: number; amr?: string[]; acr?: string } | { approved: false }

export type PollResult =
  | { status: 'slow_down'; record: DeviceRecord }
  | { status: 'pending'; record: DeviceRecord }
  | { status: 'denied'; record: DeviceRecord }
  /** Approved and now consumed by this poll: the caller issues tokens, exactly once. */
  | { status: 'approved'; record: DeviceRecord }
  /** Already consumed, or unknown / expired. */
  | { status: 'missing' }

/** A browser login session at the authorization server. */
export interface SessionRecord {
  sub: string
  username: string
  /** Set when the person signed in at this upstream identity provider (its id); absent for local users. */
  provider?: string
  /** Epoch seconds of the login. */
  authTime: number
  /** How the person signed in (src/as/sign-in-strength.ts); absent on sessions of an older version. */
  amr?: string[]
  acr?: string
  /**
   * Set while the person has given their password and not yet their second factor: such a session
   * signs nobody in (currentSession ignores it); it only lets the second-factor page finish the sign-in.
   */
  pending?: { next: UpstreamContinuation }
  /** CSRF token bound to this session. */
  csrf: string
}

/** What a sign-in at an upstream identity provider resumes once the person is back. */
export type UpstreamContinuation = { kind: 'authorize'; request: string } | { kind: 'device'; userCode: string } | { kind: 'account' }

/**
 * A sign-in sent to an upstream identity provider and not yet back, under
 * the hash of its `state` (docs/identity-providers.md). Single use.
 */
export interface UpstreamLoginRecord {
  /** Identity provider id (`identity_providers[].id`). */
  provider: string
  /** OIDC Core 3.1.2.1 `nonce` sent; the id_token must carry it. */
  nonce: string
  /** RFC 7636 code_verifier for the code exchange. */
  codeVerifier: string
  continuation: UpstreamContinuation
  /** Epoch seconds. */
  expiresAt: number
}

/** The claims of a person who signed in at an upstream provider, under their bearward `sub`. */
export interface UpstreamPersonRecord {
  provider: string
  /** The provider's `sub` for the person. */
  upstreamSub: string
  /** Mapped claims (bearward claim name → value) as of the latest sign-in. */
  claims: Record<string, unknown>
  /** Epoch seconds of that sign-in. */
  updatedAt: number
}

/** What a person allowed one application, for the account page. */
export interface AllowanceRecord {
  clientId: string
  /** Scopes the person allowed (remembered consent) and granted (grants), in the order first seen. */
  scopes: string[]
  /** Epoch seconds of the latest allowance. */
  allowedAt: number
  /** Live grants (refresh families) of this person for this client: what withdrawing revokes. */
  grantIds: string[]
}

/** One allowance to note; see Store.noteAllowance. */
export interface AllowanceNote {
  scopes: string[]
  /** Epoch seconds of the allowance (kept: the latest). */
  at: number
  /** The grant this allowance created or extended, or null (a remembered consent alone). */
  grantId: string | null
  /** Epoch seconds the note must last at least (the grant's or the consent's end). */
  until: number
  /**
   * Epoch milliseconds the person gave the authorization this note records (an authorization code's
   * issue time). When (sub, client) was withdrawn at or after it, the note is refused: the withdrawal
   * covers every authorization given before it, including a code not yet exchanged.
   */
  authorizedAtMs?: number
}

/** RFC 7591 2: the metadata a registered client is known by, as the server accepted it. */
export interface RegisteredClientMetadata {
  redirect_uris: string[]
  token_endpoint_auth_method: 'none' | 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt'
  /** private_key_jwt (RFC 7523 2.2): the client's public keys, inline (a JWK Set) ... */
  jwks?: { keys: Array<Record<string, unknown>> }
  /** ... or where it publishes them (https). */
  jwks_uri?: string
  grant_types: Array<'authorization_code' | 'refresh_token'>
  response_types: ['code']
  client_name?: string
  client_uri?: string
  logo_uri?: string
  policy_uri?: string
  tos_uri?: string
  scope?: string
  contacts?: string[]
  software_id?: string
  software_version?: string
  post_logout_redirect_uris?: string[]
}

/** What {@link Store.putClientWithin} did. */
export interface ClientSeat {
  /** True when the record was stored. */
  stored: boolean
  /** Live registrations after the call (the new one included when stored). */
  live: number
  /** When refused: epoch ms at which the first live registration expires (room again, unless deleted sooner). */
  freeAtMs: number
}

/** A client that registered itself (RFC 7591), kept until unused for `client_ttl`. */
export interface RegisteredClientRecord {
  clientId: string
  /** scrypt hash of the client secret; null for a public (`none`) client. */
  secretHash: string | null
  /** SHA-256 of the RFC 7592 registration access token. */
  registrationTokenHash: string
  metadata: RegisteredClientMetadata
  /** Epoch seconds of the registration (`client_id_issued_at`). */
  issuedAt: number
  /** Epoch seconds after which the client is forgotten (moved on by touchClient). */
  expiresAt: number
}

export interface Store {
  readonly kind: 'memory' | 'redis'

  /** Resolves when the store answers; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void>
  close(): Promise<void>

  // -- authorization codes ---------------------------------------------------
  putCode(codeHash: string, record: CodeRecord, ttlSec: number): Promise<void>
  /** Atomic Issued → Used. Exactly one of N concurrent calls gets `taken`. The Used tombstone lives until the original expiry (at least ttl). */
  takeCode(codeHash: string): Promise<TakeCodeResult>
  /** Record which grant the code produced, so a replay can revoke it. */
  linkCodeGrant(codeHash: string, grantId: string): Promise<void>

  // -- grants and refresh families -------------------------------------------
  /** Create a grant, with its first refresh token when one is issued. */
  createGrant(grant: GrantRecord, refreshHash: string | null): Promise<void>
  getGrant(grantId: string): Promise<GrantRecord | null>
  /** Raise maxAccessExp (after issuing an access token under the grant). */
  noteAccessExp(grantId: string, exp: number): Promise<void>
  /**
   * Atomic rotation. Current token → `rotated` (old hash becomes Replaced, `newHash` becomes current,
   * grant.expiresAt = newExpiresAt). A Replaced token → `reused`: the family is deleted and its grant id
   * added to the revocation list (and published) in the same step. Unknown → `missing`.
   * With `newHash` null (no rotation), the token stays current and `rotated` is returned.
   * `grantId`, when the caller found the token's grant already (findRefresh), saves a lookup; the
   * rotation still checks that `oldHash` belongs to that family. `accessExp`, the expiry of the
   * access token issued with this rotation, raises maxAccessExp in the same step (a `rotated`
   * result's grant carries it), so no noteAccessExp is needed after it.
   */
  rotateRefresh(oldHash: string, newHash: string | null, newExpiresAt: number, grantId?: string, accessExp?: number): Promise<RotateResult>
  findRefresh(refreshHash: string): Promise<RefreshLookup | null>
  /** Delete the family and put the grant id on the revocation list until `until` (published). Idempotent. */
  revokeGrant(grantId: string, until: number): Promise<void>

  // -- revocation list -------------------------------------------------------
  /** Add a jti or grant id until `exp` (epoch seconds) and publish it to every instance. */
  addRevocation(entry: RevocationEntry): Promise<void>
  /** Every unexpired entry (for load at start and periodic resync). */
  listRevocations(): Promise<RevocationEntry[]>
  /**
   * Receive entries added by any instance (this one included). Returns an
   * unsubscribe function. `onFeed(false)`: a connection was lost, messages
   * may be missed from now on; `onFeed(true)`: subscribed again, resync now.
   * A store whose feed cannot fail (memory) never calls it.
   */
  subscribeRevocations(onEntry: (entry: RevocationEntry) => void, onFeed?: (up: boolean) => void): Promise<() => Promise<void>>

  // -- opaque access tokens --------------------------------------------------
  putOpaqueToken(tokenHash: string, record: OpaqueTokenRecord): Promise<void>
  getOpaqueToken(tokenHash: string): Promise<OpaqueTokenRecord | null>
  deleteOpaqueToken(tokenHash: string): Promise<boolean>

  // -- device authorization (RFC 8628) ----------------------------------------
  /** Fails (returns false) when the user code is already in use. */
  putDevice(deviceHash: string, record: DeviceRecord): Promise<boolean>
  getDeviceByUserCode(userCode: string): Promise<{ deviceHash: string; record: DeviceRecord } | null>
  /** pending → approved/denied, only from pending and before expiry. Returns false otherwise. */
  decideDevice(userCode: string, decision: DeviceDecision): Promise<boolean>
  /** Atomic poll: slow_down when polled sooner than intervalSec after lastPollMs (interval += 5); approved → consumed once. */
  pollDevice(deviceHash: string, nowMs: number): Promise<PollResult>

  // -- browser sessions and consent ------------------------------------------
  putSession(sessionId: string, record: SessionRecord, ttlSec: number): Promise<void>
  getSession(sessionId: string): Promise<SessionRecord | null>
  deleteSession(sessionId: string): Promise<void>
  /** Remembered consent for (sub, client): the scopes granted. */
  putConsent(sub: string, clientId: string, scopes: string[], ttlSec: number): Promise<void>
  getConsent(sub: string, clientId: string): Promise<string[] | null>

  // -- what a person allowed (the account page) -------------------------------
  /**
   * Note that `sub` allowed `clientId`: scopes join the (sub, client) allowance, the time is kept if later,
   * `grantId` (when given) joins its grant index, and both last until `until` at least. The AS notes a grant
   * before creating it, so no grant exists unindexed. Keys share `sub`'s hash tag with its consent.
   * Atomic with withdrawAllowance: returns false, noting nothing, when (sub, client) was withdrawn at or
   * after `note.authorizedAtMs`; true otherwise.
   */
  noteAllowance(sub: string, clientId: string, note: AllowanceNote): Promise<boolean>
  /** The live allowances of `sub`, one per client. */
  listAllowances(sub: string): Promise<AllowanceRecord[]>
  /**
   * Atomic: forget (sub, client)'s allowance, its remembered consent and its grant index, and remember
   * the withdrawal's time for `rememberSec` (at least as long as an authorization given before it can
   * still be turned into a grant: a code's lifetime), so noteAllowance refuses such an authorization.
   * Returns the live grant ids the index held, for the caller to revoke (revokeGrant).
   */
  withdrawAllowance(sub: string, clientId: string, rememberSec: number): Promise<string[]>

  // -- registered clients (RFC 7591) -------------------------------------------
  /** Store a new registration; it lives until `record.expiresAt`. */
  putClient(record: RegisteredClientRecord): Promise<void>
  /** The registration, or null when unknown, deleted or past its expiry. */
  getClient(clientId: string): Promise<RegisteredClientRecord | null>
  /** Move a live registration's expiry to `expiresAt` (it was used); no effect on an unknown or deleted one. */
  touchClient(clientId: string, expiresAt: number): Promise<void>
  /** Forget a registration; false when there was none. */
  deleteClient(clientId: string): Promise<boolean>
  /**
   * Store a new registration only while fewer than `maxLive` registrations
   * are live (unexpired, undeleted), counted over every instance; atomic, so
   * of N concurrent calls at the cap none gets past it.
   */
  putClientWithin(record: RegisteredClientRecord, maxLive: number): Promise<ClientSeat>
  /** How many registrations are live. */
  countClients(): Promise<number>

  // -- rate limits -----------------------------------------------------------
  /** Count one hit in the fixed window of `windowSec` for key; returns the count so far in that window. */
  hit(key: string, windowSec: number): Promise<number>
  /** Current count without adding. */
  hits(key: string): Promise<number>
  /** Current count and when its window ends (epoch ms; 0 when there is no window), for an honest Retry-After. */
  hitWindow(key: string): Promise<HitWindow>
  clearHits(key: string): Promise<void>

  // -- single-use values (RFC 9449 11.1: DPoP proof jti) ----------------------
  /**
   * Atomic set-if-absent: true when `key` had not been used within its
   * lifetime (it is now recorded for `ttlSec`), false when it was (a replay).
   * Of N concurrent calls with one key exactly one gets true.
   */
  useOnce(key: string, ttlSec: number): Promise<boolean>

  // -- known browsers (device cookies) ---------------------------------------
  /**
   * Remember that the browser holding the cookie whose hash is `tokenHash`
   * signed in as `sub` (OWASP "device cookies"); replaces an earlier entry.
   */
  putKnownBrowser(tokenHash: string, sub: string, ttlSec: number): Promise<void>
  /** The `sub` a known-browser cookie was issued for; null when unknown or expired. */
  getKnownBrowser(tokenHash: string): Promise<string | null>

  // -- upstream identity providers --------------------------------------------
  /** Keep a sign-in sent to an upstream provider, under the hash of its `state`, for `ttlSec`. */
  putUpstreamLogin(stateHash: string, record: UpstreamLoginRecord, ttlSec: number): Promise<void>
  /** Atomic get-and-delete: of N concurrent calls one gets the record; null when unknown, used or expired. */
  takeUpstreamLogin(stateHash: string): Promise<UpstreamLoginRecord | null>
  /** Remember an upstream person's claims under their bearward `sub`; replaces the earlier record. */
  putUpstreamPerson(sub: string, record: UpstreamPersonRecord, ttlSec: number): Promise<void>
  getUpstreamPerson(sub: string): Promise<UpstreamPersonRecord | null>

  // -- authenticator apps (TOTP, RFC 6238) and recovery codes --------------------
  /** Set (or replace) the person's authenticator app; kept until removed. */
  putTotp(sub: string, record: TotpRecord): Promise<void>
  getTotp(sub: string): Promise<TotpRecord | null>
  /** Forget it, recovery codes included. Idempotent. */
  deleteTotp(sub: string): Promise<void>

  // -- passkeys (WebAuthn) -------------------------------------------------------
  /** Keep a challenge under its hash for `ttlSec`. */
  putPasskeyChallenge(challengeHash: string, record: PasskeyChallengeRecord, ttlSec: number): Promise<void>
  /** Atomic get-and-delete: a challenge is answered once; null when unknown, used or expired. */
  takePasskeyChallenge(challengeHash: string): Promise<PasskeyChallengeRecord | null>
  /** Add a passkey; false (nothing stored) when its credential id is already registered, to anyone. */
  addPasskey(record: PasskeyRecord): Promise<boolean>
  /** The passkey with this credential id, or null. */
  getPasskey(credentialId: string): Promise<PasskeyRecord | null>
  /** Every passkey of `sub`, oldest first. */
  listPasskeys(sub: string): Promise<PasskeyRecord[]>
  /** Give `sub`'s passkey a new name; false when `sub` has none with this id (a removed one stays removed). */
  renamePasskey(sub: string, credentialId: string, name: string): Promise<boolean>
  /** Remove `sub`'s passkey; false when `sub` has none with this id (someone else's is untouched). */
  removePasskey(sub: string, credentialId: string): Promise<boolean>
  /**
   * Atomic: record a sign-in whose authenticator reported `counter`. When either the stored or the new
   * counter is non-zero, the new one must be greater: otherwise `regressed` and nothing changes (a cloned
   * authenticator, or a replayed assertion racing the first). `missing` when the passkey was removed.
   */
  usePasskey(sub: string, credentialId: string, use: { counter: number; backedUp: boolean; at: number }): Promise<PasskeyUseResult>
}

/**
 * A person's authenticator app (TOTP, RFC 6238): the shared secret, and the
 * recovery codes' hashes. A code's single use is `useOnce` (per time step).
 */
export interface TotpRecord {
  /** The shared secret, base32 (never logged). */
  secret: string
  /** Epoch seconds it was set up (shown to the person). */
  createdAt: number
  /** Epoch seconds a first code confirmed it; null while it is being set up (it signs nobody in yet). */
  confirmedAt: number | null
  /** The recovery codes (src/crypto/secret.ts hashes), each with when it was used (null: still unused). */
  recovery: Array<{ hash: string; usedAt: number | null }>
}

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
  /** `register`: the account page adds a passkey for `sub`; `sign-in`: the login page. */
  purpose: 'register' | 'sign-in'
  /** The signed-in person a registration is for; null for a sign-in. */
  sub: string | null
  /** Epoch seconds. */
  expiresAt: number
}

/** The outcome of a passkey sign-in's counter check; see Store.usePasskey. */
export type PasskeyUseResult = 'used' | 'regressed' | 'missing'

/** One fixed-window counter as it stands. */
export interface HitWindow {
  count: number
  /** Epoch ms at which the window ends and the count returns to 0; 0 when count is 0. */
  resetMs: number
}
