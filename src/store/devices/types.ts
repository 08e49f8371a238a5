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

/** Device authorization (RFC 8628): pending → approved / denied / expired; polling too fast is `slow_down`. */
export interface DeviceStore {
  /** Fails (returns false) when the user code is already in use. */
  put(deviceHash: string, record: DeviceRecord): Promise<boolean>
  getByUserCode(userCode: string): Promise<{ deviceHash: string; record: DeviceRecord } | null>
  /** pending → approved/denied, only from pending and before expiry. Returns false otherwise. */
  decide(userCode: string, decision: DeviceDecision): Promise<boolean>
  /** Atomic poll: slow_down when polled sooner than intervalSec after lastPollMs (interval += 5); approved → consumed once. */
  poll(deviceHash: string, nowMs: number): Promise<PollResult>
}
