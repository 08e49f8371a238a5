/**
 * The gateway's in-memory copy of the revocation list (revoked `jti`s and
 * grant ids), so checking a token costs a Map lookup instead of a Redis round
 * trip (RFC 7009 2.2: a revoked token must stop working at every resource
 * server; a JWT can only be stopped by a list keyed by jti or grant).
 *
 * Loaded at start, kept current by the store's pub/sub, and merged with a full
 * reload every `resyncSec`. A resync only adds: a revocation is never
 * withdrawn, so an entry leaves the list only when its token has expired
 * (plus grace). That way a Redis that restarts empty (no persistence) cannot
 * bring a revoked token back to life in a running instance; and what the
 * store lost, the resync writes back (which publishes it), so an instance
 * that missed a message when Redis died learns it from one that had it.
 *
 * `healthy` says whether the copy can be trusted, so callers can apply their
 * store-unavailable policy. It follows the connection, not the timer: the
 * store reports a lost connection at once (`onFeed(false)`) and the list is
 * unhealthy from that moment, since a message published meanwhile is lost.
 * When the store reports the subscription back (`onFeed(true)`), a resync
 * runs at once; the list is healthy again only when that resync completed
 * with the subscription live throughout (subscribe first, then load: an
 * entry revoked during the partition is in the load, one revoked after it
 * arrives by message). While unhealthy, the resync is retried every
 * RETRY_MS.
 */
import type { Clock } from '../clock.js'
import type { RevocationEntry, Store } from './types.js'
import { REVOCATION_KINDS } from './revocations/types.js'

/** The client and `exp` of an access token of this server's own (a `client` entry refuses those issued before it). */
export interface OwnTokenClient {
  id: string
  exp: number
}

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

/** While unhealthy, a resync is retried this often (a reconnect also triggers one at once). */
export const RETRY_MS = 500
/** Entries this close to their exp are not written back to a store that lost them. */
const RESEED_MARGIN_SEC = 5
/** Writes in flight at once when writing back lost entries. */
const RESEED_BATCH = 100

type Entries = { jti: Map<string, number>; grant: Map<string, number>; client: Map<string, number> }

function emptyEntries(): Entries {
  return { jti: new Map(), grant: new Map(), client: new Map() }
}

/** In-memory revocation set kept in sync with the {@link Store}. */
export class RevocationList {
  readonly #store: Pick<Store, 'revocations'>
  readonly #clock: Clock
  readonly #log: RevocationListLog | undefined
  #resyncMs: number
  #graceSec: number
  #entries: Entries = emptyEntries()
  #healthy = false
  /** Last health state logged (null before the first load), so each change is logged once. */
  #reported: boolean | null = null
  #started = false
  #stopped = false
  #timer: NodeJS.Timeout | null = null
  #retryTimer: NodeJS.Timeout | null = null
  /** Feed losses seen so far: a resync during which one happened proves nothing. */
  #losses = 0
  /** What the store last said of the feed (assumed up until it says otherwise). */
  #feedUp = true
  #unsubscribe: (() => Promise<void>) | null = null
  /** Entries that arrived while a reload was in flight (merged into its result). */
  #arrivals: RevocationEntry[] | null = null
  #resyncing: Promise<boolean> | null = null
  /** Told of every entry this copy learns (open exchanges end on it: src/gateway/open-exchanges.ts). */
  readonly #listeners = new Set<(entry: RevocationEntry) => void>()

  constructor(store: Pick<Store, 'revocations'>, clock: Clock, log: RevocationListLog | undefined, resyncSec: number, options: RevocationListOptions = {}) {
    this.#store = store
    this.#clock = clock
    this.#log = log
    this.#resyncMs = Math.max(0.05, resyncSec) * 1000
    this.#graceSec = options.graceSec ?? 60
  }

  /**
   * Take the settings of a reloaded config: a new resync period restarts the
   * timer (the next resync is one new period away); a new grace applies to
   * the next lookup.
   */
  configure(resyncSec: number, options: RevocationListOptions = {}): void {
    this.#graceSec = options.graceSec ?? this.#graceSec
    const ms = Math.max(0.05, resyncSec) * 1000
    if (ms === this.#resyncMs) return
    this.#resyncMs = ms
    if (this.#timer !== null) {
      clearInterval(this.#timer)
      this.#startTimer()
    }
  }

  /** Seconds between periodic resyncs. */
  get resyncSec(): number {
    return this.#resyncMs / 1000
  }

  /** Seconds an entry outlives its token's exp. */
  get graceSec(): number {
    return this.#graceSec
  }

  #startTimer(): void {
    this.#timer = setInterval(() => void this.resync(), this.#resyncMs)
    this.#timer.unref()
  }

  /** True when the last load or resync from the store succeeded. */
  get healthy(): boolean {
    return this.#healthy
  }

  /** Number of entries held (expired ones may linger until the next resync). */
  get size(): number {
    return this.#entries.jti.size + this.#entries.grant.size + this.#entries.client.size
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
    this.#startTimer()
  }

  async stop(): Promise<void> {
    this.#stopped = true
    if (this.#timer) clearInterval(this.#timer)
    if (this.#retryTimer) clearTimeout(this.#retryTimer)
    this.#timer = null
    this.#retryTimer = null
    const unsubscribe = this.#unsubscribe
    this.#unsubscribe = null
    if (unsubscribe) await unsubscribe().catch(() => undefined)
  }

  /**
   * Whether a token with this jti or grant id is revoked, or (`client`, for
   * an access token of this server's own only) issued to a client disabled
   * or deleted after it was issued. Pure in-memory lookup (the hot path):
   * no I/O, no allocation.
   */
  isRevoked(jti: string | null | undefined, grantId: string | null | undefined, client?: OwnTokenClient | null): boolean {
    const nowSec = Math.floor(this.#clock.now() / 1000)
    return (
      (jti != null && this.#live(this.#entries.jti, jti, nowSec)) ||
      (grantId != null && this.#live(this.#entries.grant, grantId, nowSec)) ||
      (client != null && this.#live(this.#entries.client, client.id, nowSec) && client.exp <= (this.#entries.client.get(client.id) as number))
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
    this.#tell(entry)
  }

  /**
   * Call `listener` with every entry this copy learns from now on: added
   * here, by message, or found by a resync (a message lost while the feed was
   * down). An entry may be told more than once. Returns the unsubscribe.
   */
  onRevoked(listener: (entry: RevocationEntry) => void): () => void {
    this.#listeners.add(listener)
    return () => {
      this.#listeners.delete(listener)
    }
  }

  #tell(entry: RevocationEntry): void {
    for (const listener of this.#listeners) {
      try {
        listener(entry)
      } catch (err) {
        // A listener's bug must not stop the list from taking the entry, nor the other listeners.
        this.#log?.warn({ err: err instanceof Error ? err.message : String(err) }, 'revocation listener failed')
      }
    }
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

  /** The store's word on the feed (see the module comment). */
  #onFeed(up: boolean): void {
    if (this.#stopped) return
    if (!up) {
      this.#losses++
      this.#feedUp = false
      this.#setHealthy(false, new Error('connection to the store lost'))
      return
    }
    // Up without a loss seen (the first report after subscribing): nothing was missed.
    if (this.#feedUp) return
    this.#feedUp = true
    // A resync already in flight began before the feed came back: it cannot
    // make the list healthy, so run another one after it.
    const inflight = this.#resyncing
    if (inflight === null) void this.resync()
    else void inflight.then(() => this.resync())
  }

  /** While unhealthy, try again soon (the periodic timer may be far away). */
  #retryLater(): void {
    if (this.#stopped || this.#retryTimer !== null) return
    this.#retryTimer = setTimeout(
      () => {
        this.#retryTimer = null
        if (!this.#healthy) void this.resync()
      },
      Math.min(RETRY_MS, this.#resyncMs),
    )
    this.#retryTimer.unref()
  }

  async #reload(): Promise<boolean> {
    if (this.#stopped) return this.#healthy
    this.#arrivals = []
    const losses = this.#losses
    try {
      // Subscribe before loading, so an entry added in between is not missed.
      if (!this.#unsubscribe) {
        const unsubscribe = await this.#store.revocations.subscribe(
          (e) => this.add(e),
          (up) => this.#onFeed(up),
        )
        if (this.#stopped) await unsubscribe().catch(() => undefined)
        else this.#unsubscribe = unsubscribe
      }
      const loaded = await this.#store.revocations.list()
      const nowSec = Math.floor(this.#clock.now() / 1000)
      await this.#reseed(loaded, nowSec)
      const next = emptyEntries()
      // Keep every entry we hold until its exp plus grace (the store forgets at exp).
      for (const kind of REVOCATION_KINDS) {
        for (const [id, exp] of this.#entries[kind]) {
          if (exp + this.#graceSec >= nowSec) next[kind].set(id, exp)
        }
      }
      // Loaded entries this copy did not hold: their messages were lost, so nobody was told yet.
      const unheard = this.#listeners.size === 0 ? [] : loaded.filter((e) => !this.#entries[e.kind].has(e.id))
      for (const e of [...loaded, ...this.#arrivals]) {
        const map = next[e.kind]
        map.set(e.id, Math.max(e.exp, map.get(e.id) ?? e.exp))
      }
      this.#entries = next
      for (const e of unheard) this.#tell(e)
      // Healthy only if the feed was live from before the load until now.
      if (this.#feedUp && this.#losses === losses) this.#setHealthy(true, null)
      else this.#setHealthy(false, new Error('connection to the store lost during the resync'))
    } catch (err) {
      this.#setHealthy(false, err)
    } finally {
      this.#arrivals = null
    }
    if (!this.#healthy) this.#retryLater()
    return this.#healthy
  }

  /**
   * Write back what this instance holds and the store lost: a Redis that
   * restarted empty (no persistence) or failed over to a replica that had not
   * received the write. The write publishes too, so an instance that missed
   * the original message (Redis died with it in flight) learns it from any
   * instance that had it. Entries within RESEED_MARGIN_SEC of their exp are
   * left out: the store may already have expired them by its own clock.
   */
  async #reseed(loaded: readonly RevocationEntry[], nowSec: number): Promise<void> {
    const stored = { jti: new Set<string>(), grant: new Set<string>(), client: new Set<string>() }
    for (const e of loaded) stored[e.kind].add(e.id)
    const lost: RevocationEntry[] = []
    for (const kind of REVOCATION_KINDS) {
      for (const [id, exp] of this.#entries[kind]) if (exp > nowSec + RESEED_MARGIN_SEC && !stored[kind].has(id)) lost.push({ kind, id, exp })
    }
    if (lost.length === 0) return
    try {
      for (let i = 0; i < lost.length; i += RESEED_BATCH) await Promise.all(lost.slice(i, i + RESEED_BATCH).map((e) => this.#store.revocations.add(e)))
      this.#log?.warn({ entries: lost.length }, 'revocations the store had lost were written back')
    } catch (err) {
      // This instance still holds them; the next resync tries again. A failed write-back
      // (a replica that does not confirm, say) must not keep the list unhealthy.
      this.#log?.warn({ entries: lost.length, err: err instanceof Error ? err.message : String(err) }, 'writing back revocations the store had lost failed')
    }
  }

  #setHealthy(healthy: boolean, err: unknown): void {
    this.#healthy = healthy
    if (healthy === this.#reported) return
    this.#reported = healthy
    // Tests and operators key on these two messages: the moment routes stop and resume trusting the list.
    if (healthy) this.#log?.info({ entries: this.size }, 'revocation list loaded')
    else this.#log?.warn({ err: err instanceof Error ? err.message : String(err) }, 'revocation list unhealthy: store unreachable')
  }
}
