/**
 * One Redis connection and what is known of its health: commands are only
 * written while it is `ready`, and its heartbeat (heartbeat.ts) finds a
 * silent partition.
 */
import type { Cluster, Redis } from 'ioredis'
import { StoreUnavailableError } from '../../errors.js'
import { HEARTBEAT_DEADLINE_MS, Heartbeat } from './heartbeat.js'
import { describe, type StoreLog } from './replies.js'

export type Client = Redis | Cluster

/** How long a connection ioredis ended waits before it is connected again (see Link's #revive). */
export const REVIVE_DELAY_MS = 250

/**
 * One ioredis connection (or cluster) and what we know of its health. Commands
 * are only written while it is `ready`; before the first connection a command
 * waits for it, bounded by the command timeout.
 *
 * `up` turns false at once when the connection errors or closes, or when a
 * heartbeat PING goes unanswered for the heartbeat deadline (then the
 * connection is dropped and ioredis reconnects); `onChange` is told of
 * every change, so the revocation list can stop trusting its copy.
 */
export class Link {
  readonly client: Client
  readonly #name: string
  readonly #timeoutMs: number
  readonly #log: StoreLog | undefined
  readonly #onChange: () => void
  /** Known unreachable (an error or close since the last ready). */
  #down = false
  /** Declared dead by the heartbeat; cleared at the next ready. */
  #dead = false
  /** Last state logged, so each change is logged once. */
  #logged: 'up' | 'down' | null = null
  /** Set by close(): the connection ending then is not an outage. */
  #closing = false
  /** Connections made so far (the revocation feed subscribes anew on each). */
  #generation = 0
  /** The pending reconnect of a connection ioredis ended (see #revive). */
  #reviveTimer: NodeJS.Timeout | null = null
  /**
   * Commands waiting for the connection, each settled by the next ready,
   * error or end. One set of client listeners serves them all (a listener per
   * waiter would pass Node's 10-listener warning when many requests arrive
   * before the first connection).
   */
  readonly #waiters = new Set<(err: StoreUnavailableError | null) => void>()
  readonly #heartbeat: Heartbeat

  constructor(client: Client, name: string, timeoutMs: number, log: StoreLog | undefined, onChange: () => void = () => undefined) {
    this.client = client
    this.#name = name
    this.#timeoutMs = timeoutMs
    this.#log = log
    this.#onChange = onChange
    this.#heartbeat = new Heartbeat({
      ping: () => client.ping(),
      mayPing: () => !this.#closing && !this.#dead && client.status === 'ready',
      onSilent: (deadlineMs) => this.#silent(deadlineMs),
      deadlineMs: Math.min(HEARTBEAT_DEADLINE_MS, Math.max(timeoutMs, 100)),
    })
    client.on('ready', () => {
      this.#down = false
      this.#dead = false
      this.#generation++
      this.#heartbeat.reset()
      if (this.#logged !== 'up') this.#log?.info({ connection: this.#name }, 'store connected')
      this.#logged = 'up'
      this.#onChange()
      this.#settleWaiters(null)
    })
    // Without an 'error' listener ioredis would report every failed reconnect itself.
    client.on('error', (err: unknown) => {
      this.#fail(err)
      this.#settleWaiters(new StoreUnavailableError())
    })
    client.on('close', () => this.#fail(null))
    client.on('end', () => {
      this.#settleWaiters(new StoreUnavailableError())
      if (!this.#closing) this.#revive()
    })
  }

  /**
   * ioredis ended the connection for good, and we did not close it: it gives
   * up when its connector fails outright. With Sentinel, that happens when a
   * sentinel's failover notice (`+switch-master`) arrives while a reconnect is
   * under way: the notice closes the connector the reconnect is using, the
   * reconnect fails with "Connection is closed", and the client ends. Left
   * alone, the store would stay unreachable until a restart (seen: 90 s of
   * 503 after a failover, in test/e2e/redis-sentinel.test.ts, about one run
   * in fifteen). A store that is not closing connects again after a pause,
   * for as long as it ends.
   */
  #revive(): void {
    this.#fail(new Error('the connection ended; reconnecting'))
    const timer = setTimeout(() => {
      if (this.#closing || this.client.status !== 'end') return
      this.#log?.info({ connection: this.#name }, 'store connection ended; connecting again')
      // A failure ends the client again, and this runs again.
      this.client.connect().catch(() => undefined)
    }, REVIVE_DELAY_MS)
    timer.unref()
    this.#reviveTimer = timer
  }

  /** Connected, and answering. */
  get up(): boolean {
    return this.client.status === 'ready' && !this.#dead && !this.#closing
  }

  /** Connections made so far (changes at every reconnect). */
  get generation(): number {
    return this.#generation
  }

  #fail(err: unknown): void {
    if (this.client.status === 'ready' || this.#closing) return
    this.#down = true
    this.#heartbeat.reset()
    this.#report(err)
    this.#onChange()
  }

  #report(err: unknown): void {
    if (this.#logged !== 'down') {
      this.#log?.warn({ connection: this.#name, err: err ? describe(err) : undefined }, 'store unreachable')
    }
    this.#logged = 'down'
  }

  /** The heartbeat found the link silent: it is down until the next ready. */
  #silent(deadlineMs: number): void {
    this.#dead = true
    this.#down = true
    this.#report(new Error(`no reply to PING within ${deadlineMs} ms`))
    this.#onChange()
    // Drop the silent connection; ioredis reconnects with its backoff.
    this.client.disconnect(true)
  }

  /** Resolves when commands may be written; rejects with StoreUnavailableError otherwise. */
  async ready(): Promise<void> {
    const c = this.client
    if (this.up) return
    if (this.#down || this.#dead || c.status === 'end' || c.status === 'close') throw new StoreUnavailableError()
    await new Promise<void>((resolve, reject) => {
      const settle = (err: StoreUnavailableError | null): void => {
        clearTimeout(timer)
        this.#waiters.delete(settle)
        if (err) reject(err)
        else resolve()
      }
      const timer = setTimeout(() => {
        this.#down = true
        settle(new StoreUnavailableError('store did not answer in time'))
      }, this.#timeoutMs)
      this.#waiters.add(settle)
    })
  }

  #settleWaiters(err: StoreUnavailableError | null): void {
    for (const settle of [...this.#waiters]) settle(err)
  }

  async close(): Promise<void> {
    this.#closing = true
    this.#heartbeat.stop()
    if (this.#reviveTimer !== null) clearTimeout(this.#reviveTimer)
    const c = this.client
    if (c.status === 'ready') {
      try {
        await c.quit()
        return
      } catch {
        // fall through to a hard disconnect
      }
    }
    c.disconnect()
  }
}
