/**
 * The gateway's in-memory copy of the revocation list (revoked `jti`s and
 * grant ids), so checking a token costs a Map lookup instead of a Redis round
 * trip (RFC 7009 2.2: a revoked token must stop working at every resource
 * server; a JWT can only be stopped by a list keyed by jti or grant).
 *
 * Loaded at start, kept current by the store's pub/sub, and merged with a full
 * reload every `resyncSec`, which heals any message missed while a connection
 * was down. A resync only adds: a revocation is never withdrawn, so an entry
 * leaves the list only when its token has expired (plus grace). That way a
 * Redis that restarts empty (no persistence) cannot bring a revoked token
 * back to life in a running instance. `healthy` tells whether the last load succeeded, so callers can
 * apply their store-unavailable policy.
 */
import type { Clock } from '../clock.js'
import type { RevocationEntry, Store } from './types.js'

/** The subset of a pino logger the list uses. */
export interface RevocationListLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
}

export interface RevocationListOptions {
  /**
   * Seconds an entry is still honoured after its `exp` (default 60). A
   * verifier that accepts tokens up to `clock_skew` past `exp` must not forget
   * their revocation sooner; pass at least the gateway's clock skew.
   */
  graceSec?: number
}

type Entries = { jti: Map<string, number>; grant: Map<string, number> }

function emptyEntries(): Entries {
  return { jti: new Map(), grant: new Map() }
}

/** In-memory revocation set kept in sync with the {@link Store}. */
export class RevocationList {
  readonly #store: Store
  readonly #clock: Clock
  readonly #log: RevocationListLog | undefined
  readonly #resyncMs: number
  readonly #graceSec: number
  #entries: Entries = emptyEntries()
  #healthy = false
  /** Last health state logged (null before the first load), so each change is logged once. */
  #reported: boolean | null = null
  #started = false
  #stopped = false
  #timer: NodeJS.Timeout | null = null
  #unsubscribe: (() => Promise<void>) | null = null
  /** Entries that arrived while a reload was in flight (merged into its result). */
  #arrivals: RevocationEntry[] | null = null
  #resyncing: Promise<boolean> | null = null

  constructor(store: Store, clock: Clock, log: RevocationListLog | undefined, resyncSec: number, options: RevocationListOptions = {}) {
    this.#store = store
    this.#clock = clock
    this.#log = log
    this.#resyncMs = Math.max(0.05, resyncSec) * 1000
    this.#graceSec = options.graceSec ?? 60
  }

  /** True when the last load or resync from the store succeeded. */
  get healthy(): boolean {
    return this.#healthy
  }

  /** Number of entries held (expired ones may linger until the next resync). */
  get size(): number {
    return this.#entries.jti.size + this.#entries.grant.size
  }

  /**
   * Subscribe, load, and start the periodic resync. Never rejects: when the
   * store is unreachable the list starts unhealthy and the resync keeps trying.
   */
  async start(): Promise<void> {
    if (this.#started) return
    this.#started = true
    await this.resync()
    if (this.#stopped) return
    this.#timer = setInterval(() => void this.resync(), this.#resyncMs)
    this.#timer.unref()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
    const unsubscribe = this.#unsubscribe
    this.#unsubscribe = null
    if (unsubscribe) await unsubscribe().catch(() => undefined)
  }

  /**
   * Whether a token with this jti or grant id is revoked. Pure in-memory
   * lookup (the hot path): no I/O, no allocation.
   */
  isRevoked(jti: string | null | undefined, grantId: string | null | undefined): boolean {
    const nowSec = Math.floor(this.#clock.now() / 1000)
    return (
      (jti != null && this.#live(this.#entries.jti, jti, nowSec)) ||
      (grantId != null && this.#live(this.#entries.grant, grantId, nowSec))
    )
  }

  #live(map: Map<string, number>, id: string, nowSec: number): boolean {
    const exp = map.get(id)
    if (exp === undefined) return false
    if (exp + this.#graceSec >= nowSec) return true
    map.delete(id)
    return false
  }

  /** Apply an entry now (this instance's own revocations, and pub/sub messages). */
  add(entry: RevocationEntry): void {
    const map = this.#entries[entry.kind]
    map.set(entry.id, Math.max(entry.exp, map.get(entry.id) ?? entry.exp))
    this.#arrivals?.push(entry)
  }

  /**
   * Reload the whole list from the store, replacing the local set (entries
   * that arrived during the reload are kept). Resolves to the new `healthy`.
   * Concurrent calls share one reload.
   */
  resync(): Promise<boolean> {
    this.#resyncing ??= this.#reload().finally(() => {
      this.#resyncing = null
    })
    return this.#resyncing
  }

  async #reload(): Promise<boolean> {
    if (this.#stopped) return this.#healthy
    this.#arrivals = []
    try {
      // Subscribe before loading, so an entry added in between is not missed.
      if (!this.#unsubscribe) {
        const unsubscribe = await this.#store.subscribeRevocations((e) => this.add(e))
        if (this.#stopped) await unsubscribe().catch(() => undefined)
        else this.#unsubscribe = unsubscribe
      }
      const loaded = await this.#store.listRevocations()
      const next = emptyEntries()
      const nowSec = Math.floor(this.#clock.now() / 1000)
      // Keep every entry we hold until its exp plus grace (the store forgets at exp).
      for (const kind of ['jti', 'grant'] as const) {
        for (const [id, exp] of this.#entries[kind]) {
          if (exp + this.#graceSec >= nowSec) next[kind].set(id, exp)
        }
      }
      for (const e of [...loaded, ...this.#arrivals]) {
        const map = next[e.kind]
        map.set(e.id, Math.max(e.exp, map.get(e.id) ?? e.exp))
      }
      this.#entries = next
      this.#setHealthy(true, null)
    } catch (err) {
      this.#setHealthy(false, err)
    } finally {
      this.#arrivals = null
    }
    return this.#healthy
  }

  #setHealthy(healthy: boolean, err: unknown): void {
    this.#healthy = healthy
    if (healthy === this.#reported) return
    this.#reported = healthy
    if (healthy) this.#log?.info({ entries: this.size }, 'revocation list loaded')
    else this.#log?.warn({ err: err instanceof Error ? err.message : String(err) }, 'revocation list cannot be loaded from the store')
  }
}
