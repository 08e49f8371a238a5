/**
 * Traffic limits of gateway routes (docs/traffic.md): GCRA rate limits and
 * calendar quotas, every limit a request meets decided together, in one
 * round trip on Redis.
 */

/**
 * A rate limit as GCRA (the Generic Cell Rate Algorithm, ITU-T I.371): one
 * request every `intervalMs` on average (`per` / `limit`), and as many back
 * to back as fit in `capacityMs` (`(limit + burst) * intervalMs`).
 */
export interface RateRule {
  readonly kind: 'rate'
  readonly intervalMs: number
  readonly capacityMs: number
  /**
   * Units an instance may lease at once from the shared state on Redis
   * (lease.ts), spending them without a store call; absent on a limit too
   * small for a lease to be a small part of it, which stays exact.
   */
  readonly lease?: number
}

/** A quota: `limit` units in the calendar period that ends at `endMs` (epoch ms), named `period` (`d2026-11-28`, `m2026-11`). */
export interface QuotaRule {
  readonly kind: 'quota'
  readonly limit: number
  readonly period: string
  readonly endMs: number
}

/** One limit a request meets. */
export interface LimitTake {
  /**
   * Who is counted under which limit, already hashed by the caller (never
   * raw input from a request): the store adds only the quota's period.
   */
  readonly key: string
  /** Units the request uses of it (a batch calling one tool three times costs that tool's limit 3). */
  readonly cost: number
  readonly rule: RateRule | QuotaRule
  /**
   * Who is counted is a tool name the request's body chose (`key: tool`),
   * not an identity: text a caller invents for free. The memory store keeps
   * such keys apart, so a flood of them cannot forget an identity's count.
   */
  readonly named?: boolean
}

/** Where one limit stands after the request was decided. */
export interface LimitState {
  /** Units still available right now (after this request when it was allowed). */
  readonly remaining: number
  /** Ms until the limit is whole again: a rate limit's full allowance, a quota's period end. */
  readonly resetMs: number
  /** Ms until this request would have been allowed by this limit; 0 when it was. */
  readonly waitMs: number
}

/** What the store decided for every limit of one request. */
export interface LimitVerdict {
  /** Every limit had room: each counted the request. When false, none did (on Redis Cluster: see RedisTrafficLimits). */
  readonly allowed: boolean
  /** One per take, in order. */
  readonly states: readonly LimitState[]
  /** Decided from this instance's leases alone, without asking the store (Redis; lease.ts). */
  readonly leased?: boolean
}

export interface TrafficLimitStore {
  /**
   * Decide and count one request against all its limits at once; rejects with StoreUnavailableError when the store
   * cannot be reached. A verdict decided without the store (from leases) comes back at once, not as a promise: a
   * request that needs no store call then takes no extra turn of the event loop.
   */
  take(takes: readonly LimitTake[]): LimitVerdict | Promise<LimitVerdict>
}
