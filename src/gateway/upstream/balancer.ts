import type { UpstreamPoolConfig } from '../../config/validated-config.js'
import type { DnsGroup } from './dns-group.js'
import type { Target, UpstreamTargets } from './targets.js'

/** A configured target: an address literal (one Target) or a host name (a Target per address, dns-group.ts). */
export type TargetGroup = { readonly target: Target } | { readonly dns: DnsGroup }

/**
 * How a pooled route chooses a target for each request (docs/traffic.md,
 * "Upstream pools"): `round_robin` or `least_request` (fewest requests in
 * flight from this process, ties taken in turn) over the eligible targets
 * (target-health.ts). When none is eligible, every target is (panic mode,
 * as Envoy's): a pool whose checks all fail still tries to serve, and a
 * target that is really down answers with a quick connect failure, which
 * the retry moves on from. Built once per route per Runtime (plan/upstreams.ts).
 */
export class Balancer {
  readonly #groups: readonly TargetGroup[]
  readonly #leastRequest: boolean
  readonly #registry: UpstreamTargets
  #next = 0
  /** Non-null while a host name may still be waiting for its first answer. */
  #unresolved: true | null

  constructor(groups: readonly TargetGroup[], balance: UpstreamPoolConfig['balance'], registry: UpstreamTargets) {
    this.#groups = groups
    this.#leastRequest = balance === 'least_request'
    this.#registry = registry
    this.#unresolved = groups.some((g) => 'dns' in g) ? true : null
  }

  /** Every target now (a host name's addresses as last resolved). */
  targets(): Target[] {
    const all: Target[] = []
    for (const g of this.#groups) {
      if ('target' in g) all.push(g.target)
      else all.push(...g.dns.current())
    }
    return all
  }

  /**
   * The target for the next attempt, none of `tried`; null when every
   * target was tried. Round robin turns over the eligible targets only, so
   * an ejected one's share is spread evenly over the rest; a retry (tried
   * not null) does not turn it, so every request moves it by one.
   */
  pick(tried: ReadonlySet<Target> | null): Target | null {
    const all = this.targets()
    let candidates = all.filter((t) => tried?.has(t) !== true && t.health.eligible())
    // None eligible: every untried target is (panic mode).
    if (candidates.length === 0) candidates = all.filter((t) => tried?.has(t) !== true)
    const n = candidates.length
    if (n === 0) return null
    const start = tried === null ? this.#next++ : this.#next
    if (this.#next >= 1 << 30) this.#next = 0
    if (!this.#leastRequest) return candidates[start % n] as Target
    let best: Target | null = null
    for (let i = 0; i < n; i++) {
      const t = candidates[(start + i) % n] as Target
      if (best === null || t.health.inFlight < best.health.inFlight) best = t
    }
    return best
  }

  /** Settles when every host name had its first answer (at once for address targets). */
  get ready(): Promise<void> | null {
    if (this.#unresolved === null) return null
    const pending = this.#groups.filter((g): g is { readonly dns: DnsGroup } => 'dns' in g && !g.dns.settled)
    if (pending.length === 0) {
      this.#unresolved = null
      return null
    }
    return Promise.all(pending.map((g) => g.dns.ready)).then(() => undefined)
  }

  /** Settles when the resolutions under way were applied (a test awaits a TTL's refresh with it). */
  resolving(): Promise<void> {
    return Promise.all(this.#groups.map((g) => ('dns' in g ? g.dns.pending : undefined))).then(() => undefined)
  }

  /** How many attempts a request may make: one per target, at most. */
  get maxAttempts(): number {
    return this.targets().length
  }

  /** Release every target (the Runtime closed). */
  async close(): Promise<void> {
    await Promise.all(this.#groups.map((g) => ('target' in g ? this.#registry.release(g.target) : g.dns.close())))
  }
}
