/**
 * The revocation feed on Redis pub/sub: one subscriber connection per store,
 * the channel subscribed again at every reconnect (by us, so we know when),
 * and listeners told at once of a lost connection and of the re-established
 * subscription, so the gateway's revocation list never trusts a feed that
 * may have missed a message.
 */
import type { Cluster, Redis } from 'ioredis'
import { StoreUnavailableError } from '../../errors.js'
import type { RevocationEntry } from '../revocations/types.js'
import { createClusterSubscriber } from './client.js'
import type { RedisConnection } from './connection.js'
import { Link } from './link.js'
import { describe, unavailable } from './replies.js'

function parseEntry(message: string): RevocationEntry | null {
  try {
    const v = JSON.parse(message) as { kind?: unknown; id?: unknown; exp?: unknown }
    if ((v.kind === 'jti' || v.kind === 'grant' || v.kind === 'client') && typeof v.id === 'string' && typeof v.exp === 'number') {
      return { kind: v.kind, id: v.id, exp: v.exp }
    }
  } catch {
    // fall through: a message we did not write is ignored
  }
  return null
}

export class RevocationFeed {
  readonly #r: RedisConnection
  #sub: Link | null = null
  readonly #listeners = new Set<(entry: RevocationEntry) => void>()
  readonly #feedListeners = new Set<(up: boolean) => void>()
  /** The SUBSCRIBE in flight on the subscriber connection, if any. */
  #subscribing: Promise<void> | null = null
  #subscribingGeneration = -1
  /** The subscriber connection generation whose SUBSCRIBE was acknowledged, or -1. */
  #subscribedGeneration = -1
  /** The feed state last told to the feed listeners. */
  #feedReported = false

  constructor(r: RedisConnection) {
    this.#r = r
  }

  /**
   * Entries published by any instance. `onFeed(false)` is called as soon as
   * either connection is lost or found dead (messages may be missed from then
   * on), `onFeed(true)` once both are back and the channel is subscribed anew;
   * right after subscribing it is called with the current state when that is
   * down. The caller resyncs on `true` (see RevocationList).
   */
  async subscribe(onEntry: (entry: RevocationEntry) => void, onFeed?: (up: boolean) => void): Promise<() => Promise<void>> {
    if (this.#r.closed) throw new StoreUnavailableError('store closed')
    // Listen before subscribing: a loss during the SUBSCRIBE is not missed.
    const feed = onFeed ? (up: boolean): void => onFeed(up) : null
    if (feed) this.#feedListeners.add(feed)
    try {
      // The feed is up only when both connections are: wait for the command
      // connection too, or a loaded machine reports a loss at subscribe time
      // (the main connection still handshaking) that never happened.
      await Promise.all([this.#ensureSubscribed(), this.#r.main.ready()])
    } catch (err) {
      if (feed) this.#feedListeners.delete(feed)
      throw err
    }
    const fn = (e: RevocationEntry): void => onEntry(e)
    this.#listeners.add(fn)
    if (feed && !this.#feedUp()) feed(false)
    return async () => {
      this.#listeners.delete(fn)
      if (feed) this.#feedListeners.delete(feed)
    }
  }

  async close(): Promise<void> {
    this.#listeners.clear()
    this.#feedListeners.clear()
    await this.#sub?.close()
  }

  /** Both connections answer and the channel is subscribed on the current subscriber connection. */
  #feedUp(): boolean {
    const sub = this.#sub
    return !this.#r.closed && this.#r.main.up && sub?.up === true && this.#subscribedGeneration === sub.generation
  }

  /** A connection changed state: tell the feed listeners when the feed's state changed. */
  changed(): void {
    const up = this.#feedUp()
    if (up === this.#feedReported) return
    this.#feedReported = up
    for (const fn of this.#feedListeners) {
      try {
        fn(up)
      } catch (err) {
        this.#r.options.log?.error({ err: describe(err) }, 'revocation feed listener failed')
      }
    }
  }

  async #ensureSubscribed(): Promise<void> {
    if (!this.#sub) {
      // autoResubscribe off: #subscribe runs at every 'ready' and marks the generation it acknowledged.
      const r = this.#r
      const client = r.cluster
        ? createClusterSubscriber(r.main.client as Cluster, r.options, r.timeoutMs)
        : (r.main.client as Redis).duplicate({ autoResubscribe: false })
      const sub = new Link(client, 'subscriber', r.timeoutMs, r.options.log, () => this.changed())
      sub.client.on('ready', () => void this.#subscribe(sub).catch(() => undefined))
      sub.client.on('message', (channel: string, message: string) => {
        if (channel !== r.channel) return
        const entry = parseEntry(message)
        if (!entry) return
        for (const fn of this.#listeners) {
          try {
            fn({ ...entry })
          } catch (err) {
            r.options.log?.error({ err: describe(err) }, 'revocation listener failed')
          }
        }
      })
      this.#sub = sub
    }
    const sub = this.#sub
    if (sub.up && this.#subscribedGeneration === sub.generation) return
    try {
      await sub.ready()
      await this.#subscribe(sub)
    } catch (err) {
      throw unavailable(err)
    }
    if (this.#subscribedGeneration !== sub.generation) throw new StoreUnavailableError()
  }

  /** SUBSCRIBE on the subscriber's current connection; concurrent calls on one connection share one. */
  #subscribe(sub: Link): Promise<void> {
    const generation = sub.generation
    if (this.#subscribing !== null && this.#subscribingGeneration === generation) return this.#subscribing
    const run: Promise<void> = sub.client.subscribe(this.#r.channel).then(
      () => {
        if (this.#subscribing === run) this.#subscribing = null
        if (sub.generation === generation && sub.up) this.#subscribedGeneration = generation
        this.changed()
      },
      (err: unknown) => {
        if (this.#subscribing === run) this.#subscribing = null
        throw err
      },
    )
    this.#subscribing = run
    this.#subscribingGeneration = generation
    return run
  }
}
