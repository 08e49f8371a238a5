/**
 * The embedded store: one process, no Redis. The record of every family's
 * memory implementation; same semantics as the Redis store (both pass the
 * contract suite in test/store/). Every transition runs in one synchronous
 * block, which is what makes it atomic on Node's single thread.
 *
 * Expiry is judged by the injected Clock, lazily on read; an unref'd sweep
 * drops dead entries so memory stays bounded without reads.
 */
import type { Clock } from '../clock.js'
import { MemoryAllowances } from './allowances/memory.js'
import { MemoryClients } from './clients/memory.js'
import { MemoryCodes } from './codes/memory.js'
import { MemoryDeliveries } from './deliveries/memory.js'
import { MemoryDevices } from './devices/memory.js'
import { MemoryGrants } from './grants/memory.js'
import { MemoryKnownBrowsers } from './known-browsers/memory.js'
import { type MemoryFamily, MemoryScope } from './memory/scope.js'
import { MemoryOpaqueTokens } from './opaque-tokens/memory.js'
import { MemoryPasskeys } from './passkeys/memory.js'
import { MemoryPeople } from './people/memory.js'
import { MemoryAdminClients } from './admin-clients/memory.js'
import { MemoryPushedRequests } from './pushed-requests/memory.js'
import { MemoryRateLimits } from './rate-limits/memory.js'
import { MemoryRevocations } from './revocations/memory.js'
import { MemoryConsents, MemorySessions } from './sessions/memory.js'
import { MemorySingleUse } from './single-use/memory.js'
import { MemoryMcpSessions } from './mcp-sessions/memory.js'
import { MemoryTotp } from './totp/memory.js'
import type { Store } from './types.js'
import { MemoryUpstream } from './upstream/memory.js'
import { MemoryTrafficLimits } from './traffic-limits/memory.js'
import { MemorySignals } from './signals/memory.js'

/** Default period of the sweep that drops expired entries. */
const DEFAULT_SWEEP_MS = 60_000

export interface MemoryStoreOptions {
  /** How often expired entries are swept (ms, default 60 s). 0 disables the sweep. */
  sweepIntervalMs?: number
  /** Where a failing revocation subscriber is reported. */
  log?: { error(obj: object, msg: string): void }
}

/**
 * In-process {@link Store}. Revocations are published to subscribers of this
 * instance only (there is no other instance).
 */
export class MemoryStore implements Store {
  readonly kind = 'memory' as const
  readonly codes: MemoryCodes
  readonly grants: MemoryGrants
  readonly revocations: MemoryRevocations
  readonly opaqueTokens: MemoryOpaqueTokens
  readonly devices: MemoryDevices
  readonly sessions: MemorySessions
  readonly consents: MemoryConsents
  readonly allowances: MemoryAllowances
  readonly clients: MemoryClients
  readonly rateLimits: MemoryRateLimits
  readonly singleUse: MemorySingleUse
  readonly knownBrowsers: MemoryKnownBrowsers
  readonly upstream: MemoryUpstream
  readonly totp: MemoryTotp
  readonly passkeys: MemoryPasskeys
  readonly mcpSessions: MemoryMcpSessions
  readonly pushedRequests: MemoryPushedRequests
  readonly trafficLimits: MemoryTrafficLimits
  readonly signals: MemorySignals
  readonly deliveries: MemoryDeliveries
  readonly people: MemoryPeople
  readonly adminClients: MemoryAdminClients

  readonly #scope: MemoryScope
  /** The families whose entries expire (authenticator apps are kept until removed). */
  readonly #expiring: readonly MemoryFamily[]
  #sweep: NodeJS.Timeout | null = null

  constructor(clock: Clock, options: MemoryStoreOptions = {}) {
    const s = new MemoryScope(clock)
    this.#scope = s
    this.codes = new MemoryCodes(s)
    this.revocations = new MemoryRevocations(s, options.log ? { log: options.log } : {})
    this.grants = new MemoryGrants(s, this.revocations)
    this.opaqueTokens = new MemoryOpaqueTokens(s)
    this.devices = new MemoryDevices(s)
    this.sessions = new MemorySessions(s)
    this.consents = new MemoryConsents(s)
    this.allowances = new MemoryAllowances(s, this.consents)
    this.clients = new MemoryClients(s)
    this.rateLimits = new MemoryRateLimits(s)
    this.singleUse = new MemorySingleUse(s)
    this.knownBrowsers = new MemoryKnownBrowsers(s)
    this.upstream = new MemoryUpstream(s)
    this.totp = new MemoryTotp(s)
    this.passkeys = new MemoryPasskeys(s)
    this.mcpSessions = new MemoryMcpSessions(s)
    this.pushedRequests = new MemoryPushedRequests(s)
    this.trafficLimits = new MemoryTrafficLimits(s)
    this.signals = new MemorySignals(s)
    this.deliveries = new MemoryDeliveries(s)
    this.people = new MemoryPeople(s)
    this.adminClients = new MemoryAdminClients(s)
    this.#expiring = [
      this.codes,
      this.grants,
      this.revocations,
      this.opaqueTokens,
      this.devices,
      this.sessions,
      this.consents,
      this.allowances,
      this.clients,
      this.rateLimits,
      this.singleUse,
      this.knownBrowsers,
      this.upstream,
      this.passkeys,
      this.mcpSessions,
      this.pushedRequests,
      this.trafficLimits,
      this.signals,
      this.deliveries,
      this.people,
      this.adminClients,
    ]
    const every = options.sweepIntervalMs ?? DEFAULT_SWEEP_MS
    if (every > 0) {
      this.#sweep = setInterval(() => this.sweep(), every)
      this.#sweep.unref()
    }
  }

  /** Entries held in all tables, expired ones included until swept (for tests and metrics). */
  get size(): number {
    return this.#expiring.reduce((n, f) => n + f.size, 0)
  }

  /** Drop every entry whose time has passed (the periodic sweep; callable directly). */
  sweep(): void {
    const now = this.#scope.nowMs()
    for (const f of this.#expiring) f.sweep(now)
  }

  async ping(): Promise<void> {
    this.#scope.open()
  }

  async close(): Promise<void> {
    this.#scope.close()
    if (this.#sweep) clearInterval(this.#sweep)
    this.#sweep = null
    this.revocations.close()
  }
}
