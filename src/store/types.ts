/**
 * The state bearward keeps: a record of stores, one per family of records,
 * each with a memory implementation (embedded, single instance) and a Redis
 * one (shared) side by side in its folder. Both pass the contract suite in
 * test/store/.
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
 *
 * A caller takes only the families it uses: `Pick<Store, 'revocations'>`, or
 * the family's interface itself.
 */
import type { AdminClientStore } from './admin-clients/types.js'
import type { AllowanceStore } from './allowances/types.js'
import type { ClientStore } from './clients/types.js'
import type { CodeStore } from './codes/types.js'
import type { DeliveryStore } from './deliveries/types.js'
import type { DeviceStore } from './devices/types.js'
import type { GrantStore } from './grants/types.js'
import type { KnownBrowserStore } from './known-browsers/types.js'
import type { McpSessionStore } from './mcp-sessions/types.js'
import type { OpaqueTokenStore } from './opaque-tokens/types.js'
import type { PasskeyStore } from './passkeys/types.js'
import type { PeopleStore } from './people/types.js'
import type { PushedRequestStore } from './pushed-requests/types.js'
import type { RateLimitStore } from './rate-limits/types.js'
import type { RevocationStore } from './revocations/types.js'
import type { ConsentStore, SessionStore } from './sessions/types.js'
import type { SingleUseStore } from './single-use/types.js'
import type { SignalStore } from './signals/types.js'
import type { TotpStore } from './totp/types.js'
import type { TrafficLimitStore } from './traffic-limits/types.js'
import type { UpstreamStore } from './upstream/types.js'

export type { AdminClientChange, AdminClientRecord, AdminClientStore, AdminClientUpdate } from './admin-clients/types.js'
export type { AllowanceNote, AllowanceRecord, AllowanceStore } from './allowances/types.js'
export type { ClientSeat, ClientStore, RegisteredClientMetadata, RegisteredClientRecord } from './clients/types.js'
export type { CodeRecord, CodeStore, TakeCodeResult } from './codes/types.js'
export type { DeliveryStore, QueuedDelivery } from './deliveries/types.js'
export type { DeviceDecision, DeviceRecord, DeviceStatus, DeviceStore, PollResult } from './devices/types.js'
export type { GrantRecord, GrantStore, RefreshLookup, RotateResult } from './grants/types.js'
export type { KnownBrowserStore } from './known-browsers/types.js'
export type { McpSessionStore } from './mcp-sessions/types.js'
export type { OpaqueTokenRecord, OpaqueTokenStore } from './opaque-tokens/types.js'
export type { PasswordLinkRecord, PeopleStore, PersonChange, PersonCreated, PersonRecord, PersonUpdate } from './people/types.js'
export type { PasskeyChallengeRecord, PasskeyRecord, PasskeyStore, PasskeyUseResult } from './passkeys/types.js'
export type { PushedRequestRecord, PushedRequestStore } from './pushed-requests/types.js'
export type { HitWindow, RateLimitStore } from './rate-limits/types.js'
export type { RevocationEntry, RevocationKind, RevocationStore } from './revocations/types.js'
export type { ConsentStore, EndedSession, SessionRecord, SessionStore } from './sessions/types.js'
export type { SingleUseStore } from './single-use/types.js'
export type { SignalStore } from './signals/types.js'
export type { TotpRecord, TotpStore } from './totp/types.js'
export type { LimitState, LimitTake, LimitVerdict, QuotaRule, RateRule, TrafficLimitStore } from './traffic-limits/types.js'
export type { UpstreamContinuation, UpstreamLoginRecord, UpstreamPersonRecord, UpstreamStore } from './upstream/types.js'

/** Every family of records, and the store's own lifecycle. */
export interface Store {
  readonly kind: 'memory' | 'redis'
  readonly codes: CodeStore
  readonly grants: GrantStore
  readonly revocations: RevocationStore
  readonly opaqueTokens: OpaqueTokenStore
  readonly devices: DeviceStore
  readonly sessions: SessionStore
  readonly consents: ConsentStore
  readonly allowances: AllowanceStore
  readonly clients: ClientStore
  readonly rateLimits: RateLimitStore
  readonly singleUse: SingleUseStore
  readonly knownBrowsers: KnownBrowserStore
  readonly upstream: UpstreamStore
  readonly totp: TotpStore
  readonly passkeys: PasskeyStore
  readonly mcpSessions: McpSessionStore
  readonly pushedRequests: PushedRequestStore
  readonly trafficLimits: TrafficLimitStore
  readonly signals: SignalStore
  readonly deliveries: DeliveryStore
  readonly people: PeopleStore
  readonly adminClients: AdminClientStore

  /** Resolves when the store answers; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void>
  close(): Promise<void>
}
