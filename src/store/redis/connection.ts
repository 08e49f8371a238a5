/**
 * The command connection every Redis family shares: key names, the one way a
 * command is sent (failing fast with StoreUnavailableError while Redis is
 * down, each bounded by the command timeout), scripts by EVALSHA, and the
 * value shapes several families store alike.
 *
 * Time: expiry decisions compare the injected Clock with times stored in the
 * records; Redis TTLs only collect garbage (set to the same deadline,
 * relative to the Clock's now). Tests can therefore move a ManualClock
 * instead of sleeping, with a real Redis.
 */
import type { Clock } from '../../clock.js'
import { StoreUnavailableError } from '../../errors.js'
import { createClient } from './client.js'
import { keyOf } from './keys.js'
import { type Client, Link } from './link.js'
import type { RedisStoreOptions } from './options.js'
import { confirmReplicated } from './replica-wait.js'
import { unavailable } from './replies.js'
import { type LuaScript, PUT_HASH } from './scripts.js'

export type Arg = string | number

export class RedisConnection {
  readonly options: RedisStoreOptions
  readonly clock: Clock
  readonly prefix: string
  /** The revocation channel. */
  readonly channel: string
  readonly timeoutMs: number
  /** Redis Cluster: keys of one call may lie on different nodes. */
  readonly cluster: boolean
  readonly main: Link
  #closed = false

  /** `onChange` is told of every change of the connection's health (the revocation feed's state depends on it). */
  constructor(options: RedisStoreOptions, onChange: () => void) {
    this.options = options
    this.clock = options.clock
    this.prefix = options.keyPrefix ?? 'bw:'
    this.channel = `${this.prefix}revocations`
    this.timeoutMs = options.commandTimeoutMs ?? 1000
    this.cluster = (options.cluster?.length ?? 0) > 0
    this.main = new Link(createClient(options, this.timeoutMs), 'main', this.timeoutMs, options.log, onChange)
  }

  get closed(): boolean {
    return this.#closed
  }

  async close(): Promise<void> {
    this.#closed = true
    await this.main.close()
  }

  key(kind: string, tag: string, rest = ''): string {
    return keyOf(this.prefix, kind, tag, rest)
  }

  ttlMs(untilMs: number): number {
    return Math.max(1, Math.ceil(untilMs - this.clock.now()))
  }

  /** Run commands on the main connection; any failure becomes StoreUnavailableError. */
  async do<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError('store closed')
    await this.main.ready()
    try {
      return await fn(this.main.client)
    } catch (err) {
      throw unavailable(err)
    }
  }

  /** EVALSHA, loading the script with EVAL when the server does not have it yet. */
  async eval(c: Client, s: LuaScript, keys: string[], args: Arg[]): Promise<unknown> {
    try {
      return await c.evalsha(s.sha, keys.length, ...keys, ...args)
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
        return await c.eval(s.lua, keys.length, ...keys, ...args)
      }
      throw err
    }
  }

  /** Replace the hash at `key` with `fields`, living `ttlMs`: one script. */
  async putHash(c: Client, key: string, ttlMs: number, fields: Record<string, Arg>): Promise<void> {
    const flat: Arg[] = []
    for (const [k, v] of Object.entries(fields)) flat.push(k, v)
    await this.eval(c, PUT_HASH, [key], [ttlMs, ...flat])
  }

  /** A value kept as a string `{v, e: expires ms}` for `ttlSec`. */
  async putExpiring(key: string, value: unknown, ttlSec: number): Promise<void> {
    const expMs = this.clock.now() + ttlSec * 1000
    await this.do((c) => c.set(key, JSON.stringify({ v: value, e: expMs }), 'PX', this.ttlMs(expMs)))
  }

  async getExpiring<T>(key: string): Promise<T | null> {
    return this.#unexpired<T>(await this.do((c) => c.get(key)))
  }

  /** Get-and-delete with GETDEL (Redis 6.2): one command, so of N concurrent takes exactly one gets the value. */
  async takeExpiring<T>(key: string): Promise<T | null> {
    return this.#unexpired<T>(await this.do((c) => c.getdel(key)))
  }

  #unexpired<T>(raw: string | null): T | null {
    if (raw === null) return null
    const { v, e } = JSON.parse(raw) as { v: T; e: number }
    return this.clock.now() < e ? v : null
  }

  /** Revocation writes to `keys` reached the configured replicas; see replica-wait.ts. */
  confirmReplicated(c: Client, keys: string[]): Promise<void> {
    return confirmReplicated(c, keys, this.cluster, this.options)
  }
}
