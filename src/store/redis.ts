/**
 * The shared store on Redis (single node or Cluster) via ioredis.
 *
 * Atomicity: every transition documented "atomic" in `types.ts` is one command
 * or one Lua script (`redis-scripts.ts`). Keys a script touches share a hash
 * tag (`{...}`), so scripts are cluster-safe.
 *
 * Time: expiry decisions compare the injected Clock with times stored in the
 * records (the script gets "now" as an argument); Redis TTLs only collect
 * garbage (set to the same deadline, relative to the Clock's now). Tests can
 * therefore move a ManualClock instead of sleeping, with a real Redis.
 *
 * Key layout (`p` = keyPrefix, default `bw:`; every variable part is
 * percent-encoded so it can hold no brace):
 *   p code:{hash}     hash {r: record JSON, st: i|u, gid, exp, dl: deadline ms}
 *   p grant:{gid}     hash {g: grant JSON, exp, max, cur: current hash,
 *                           rev: revoked-until (tombstone), t:<hash>: issuedAt}
 *   p rt:{hash}       string grant id (refresh-token index)
 *   p revoked:{jti}, p revoked:{grant}   sorted sets, score = exp (epoch s)
 *   p at:{hash}       hash {r: opaque token JSON, exp}
 *   p dev:{hash}      hash of the DeviceRecord fields
 *   p ucode:{code}    hash {d: device hash, e: expires ms}
 *   p sess:{sha256(id)}, p consent:{sub}:client   string {r|s, e: expires ms}
 *   p apps:{sub}      hash client id → JSON {s: scopes, at, e: until ms} (account page)
 *   p ugrants:{sub}:client   sorted set of grant ids, score = until (s)
 *                     (apps, ugrants and consent of one sub share its tag: withdrawal is one script)
 *   p rl:{key}        hash {c: count, r: window reset ms}
 *   p once:{key}      string: used-until ms (useOnce; DPoP proof jti)
 *   p client:{id}     hash {r: RegisteredClientRecord JSON, e: expires ms}
 *   p upl:{stateHash} string {v: UpstreamLoginRecord, e: expires ms} (taken with GETDEL)
 *   p person:{sub}    string {v: UpstreamPersonRecord, e: expires ms}
 *   p pkc:{hash}      string {v: PasskeyChallengeRecord, e: expires ms} (taken with GETDEL)
 *   p pk:{sub}        hash r:<credential id> PasskeyRecord JSON, c:<id> counter, b:<id> backed up 1|0,
 *                     u:<id> last used (s) (the counter script touches this key alone)
 *   p pkid:{id}       string sub: which person a credential id belongs to (SET NX: ids are unique)
 *   channel p revocations: RevocationEntry JSON
 *
 * Refresh families: the caller gives only a token hash, so `rt:{hash}` maps it
 * to its grant id (one GET), and the rotation script then runs on the grant's
 * key alone and re-checks that the hash is a member of that family (field
 * `t:<hash>`): a race between the lookup and the script can only make it answer
 * `missing`. The new token's index key is written before the script, so once
 * the rotation commits the new token is findable; a leftover index key pointing
 * at a family that does not hold the hash is harmless.
 * On reuse the family becomes a tombstone (`rev`), which still recognises the
 * family's tokens as `reused` (so N concurrent replays of one token give one
 * `rotated` and N-1 `reused`) but serves nothing. On a single node the same
 * script adds the grant to `revoked:{grant}` and publishes; on Cluster that set
 * lives in another slot, so the script publishes and the client adds the entry
 * right after (re-added on any later replay, as ZADD GT is idempotent).
 *
 * Failure: commands fail fast with StoreUnavailableError while Redis is down
 * (no offline queue, nothing replayed after a caller saw an error), each
 * bounded by `commandTimeoutMs`; the client reconnects forever with a backoff
 * capped at 500 ms (so service returns within about that of Redis answering),
 * and a state change is logged once. A heartbeat PING on each connection finds
 * a silent partition (no RST) within HEARTBEAT_INTERVAL_MS +
 * HEARTBEAT_DEADLINE_MS (1 s). The revocation subscriber is told at once of
 * a lost connection and of the re-established subscription, so the gateway's
 * revocation list never trusts a feed that may have missed a message.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis'
import type { ConnectionOptions } from 'node:tls'
import type { Clock } from '../clock.js'
import { StoreUnavailableError } from '../errors.js'
import { hashToken } from './hash.js'
import { masterOf, rotatingConnector, type NodeAddress } from './redis-cluster.js'
import {
  ADD_REVOCATION,
  CLAIM_USER_CODE,
  DECIDE_DEVICE,
  DELETE_OPAQUE,
  HIT,
  HIT_WINDOWS,
  LINK_CODE_GRANT,
  NOTE_ACCESS_EXP,
  NOTE_ALLOWANCE,
  POLL_DEVICE,
  PUT_HASH,
  REVOKE_GRANT,
  ROTATE_REFRESH,
  SEAT_CLIENT,
  TAKE_CODE,
  TOUCH_CLIENT,
  USE_ONCE,
  USE_PASSKEY,
  RENAME_PASSKEY,
  WITHDRAW_ALLOWANCE,
  type LuaScript,
} from './redis-scripts.js'
import type {
  AllowanceNote,
  AllowanceRecord,
  CodeRecord,
  DeviceDecision,
  DeviceRecord,
  DeviceStatus,
  GrantRecord,
  HitWindow,
  OpaqueTokenRecord,
  PollResult,
  RefreshLookup,
  ClientSeat,
  RegisteredClientRecord,
  RevocationEntry,
  RevocationKind,
  RotateResult,
  SessionRecord,
  UpstreamLoginRecord,
  UpstreamPersonRecord,
  PasskeyChallengeRecord,
  PasskeyRecord,
  TotpRecord,
  PasskeyUseResult,
  Store,
  TakeCodeResult,
} from './types.js'

/** The subset of a pino logger the store uses. */
export interface StoreLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

export interface RedisStoreOptions {
  /** redis:// or rediss:// URL (may hold a password: never logged). */
  url: string
  /** Cluster seed nodes (`host:port` or redis:// URLs); empty or absent for a single node. */
  cluster?: string[]
  /**
   * Sentinels (`host:port`) that name the master of `sentinelName`; with
   * them `url` only carries credentials, database and TLS.
   */
  sentinels?: string[]
  sentinelName?: string
  /**
   * Revocation writes wait until this many replicas hold them (Redis WAIT),
   * at most `timeoutMs`; fewer in time fails the call (StoreUnavailableError,
   * the write stays on the master). `replicas: 0` does not wait. The count is
   * capped by the replicas the master has (Cluster: in the slot table; one
   * server or Sentinel: connected now, from ROLE).
   */
  replicaWait?: { replicas: number; timeoutMs: number }
  /**
   * Told each time a revocation write was not confirmed by its replicas in
   * time (the metric bearward_store_replica_wait_timeouts_total): a rising
   * count means replicas lag or are gone, and clients see 503s for it.
   */
  onReplicaWaitTimeout?: () => void
  /** Prefix of every key and of the revocation channel (default `bw:`). */
  keyPrefix?: string
  /** Per-command timeout (default 1000 ms). */
  commandTimeoutMs?: number
  clock: Clock
  log?: StoreLog
  /** Cap of the reconnect backoff (default 500 ms). */
  maxReconnectDelayMs?: number
}

type Client = Redis | Cluster
type Arg = string | number

const KINDS: readonly RevocationKind[] = ['jti', 'grant']
const DEVICE_STATUSES: readonly DeviceStatus[] = ['pending', 'approved', 'denied', 'consumed']

/** Percent-encode a key part, so it cannot contain `{`/`}` (hash tags) or `:`. */
function part(value: string): string {
  return encodeURIComponent(value)
}

function unavailable(err: unknown): StoreUnavailableError {
  if (err instanceof StoreUnavailableError) return err
  return new StoreUnavailableError('store unavailable', { cause: err })
}

/** A message that is safe to log: no URL (it may carry a password), no values. */
function describe(err: unknown): { code?: string; message: string } {
  if (!(err instanceof Error)) return { message: 'unknown error' }
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' ? { code, message: err.message } : { message: err.message }
}

/**
 * How often each connection is probed with PING. A TCP black hole (a cut
 * link that sends no RST) leaves ioredis believing it is connected for
 * minutes; the heartbeat finds it instead.
 */
export const HEARTBEAT_INTERVAL_MS = 250
/** Most a PING may stay unanswered before the link is declared dead (also capped by the command timeout). */
export const HEARTBEAT_DEADLINE_MS = 750

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
class Link {
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
  /** Connections made so far: a reply to a PING from an earlier one does not count. */
  #generation = 0
  /** performance.now() when the unanswered PING was sent, or null. */
  #pingSentAt: number | null = null
  /** Fires when the PING in flight reaches its deadline unanswered. */
  #pingDeadline: NodeJS.Timeout | null = null
  /**
   * Commands waiting for the connection, each settled by the next ready,
   * error or end. One set of client listeners serves them all (a listener per
   * waiter would pass Node's 10-listener warning when many requests arrive
   * before the first connection).
   */
  readonly #waiters = new Set<(err: StoreUnavailableError | null) => void>()
  readonly #heartbeat: NodeJS.Timeout
  readonly #deadlineMs: number

  constructor(client: Client, name: string, timeoutMs: number, log: StoreLog | undefined, onChange: () => void = () => undefined) {
    this.client = client
    this.#name = name
    this.#timeoutMs = timeoutMs
    this.#log = log
    this.#onChange = onChange
    this.#deadlineMs = Math.min(HEARTBEAT_DEADLINE_MS, Math.max(timeoutMs, 100))
    client.on('ready', () => {
      this.#down = false
      this.#dead = false
      this.#generation++
      this.#pingSentAt = null
      this.#clearPingDeadline()
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
    client.on('end', () => this.#settleWaiters(new StoreUnavailableError()))
    this.#heartbeat = setInterval(() => this.#beat(), HEARTBEAT_INTERVAL_MS)
    this.#heartbeat.unref()
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
    this.#pingSentAt = null
    this.#clearPingDeadline()
    this.#report(err)
    this.#onChange()
  }

  #report(err: unknown): void {
    if (this.#logged !== 'down') {
      this.#log?.warn({ connection: this.#name, err: err ? describe(err) : undefined }, 'store unreachable')
    }
    this.#logged = 'down'
  }

  /**
   * One heartbeat tick: send a PING unless one is in flight. Each PING has
   * its own deadline timer, so a silent link is found the deadline after the
   * first unanswered PING (at most interval + deadline after the silence
   * began), not at the first tick after it, which could be a whole interval later.
   */
  #beat(): void {
    if (this.#closing || this.#dead || this.client.status !== 'ready' || this.#pingSentAt !== null) return
    const generation = this.#generation
    const sentAt = performance.now()
    this.#pingSentAt = sentAt
    this.#pingDeadline = setTimeout(() => this.#pastDeadline(sentAt), this.#deadlineMs)
    this.#pingDeadline.unref()
    this.client.ping().then(
      () => {
        if (this.#generation !== generation || this.#pingSentAt !== sentAt) return
        this.#pingSentAt = null
        this.#clearPingDeadline()
      },
      () => undefined, // a failed PING is judged by the deadline, or by the close that caused it
    )
  }

  #pastDeadline(sentAt: number): void {
    // Let pending socket reads run first (setImmediate comes after the poll
    // phase): a reply that was only held up by a busy event loop must not
    // count as a dead link.
    setImmediate(() => {
      if (this.#pingSentAt !== sentAt || this.#closing || this.client.status !== 'ready') return
      this.#dead = true
      this.#down = true
      this.#pingSentAt = null
      this.#pingDeadline = null
      this.#report(new Error(`no reply to PING within ${this.#deadlineMs} ms`))
      this.#onChange()
      // Drop the silent connection; ioredis reconnects with its backoff.
      this.client.disconnect(true)
    })
  }

  #clearPingDeadline(): void {
    if (this.#pingDeadline !== null) clearTimeout(this.#pingDeadline)
    this.#pingDeadline = null
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
    clearInterval(this.#heartbeat)
    this.#clearPingDeadline()
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

function parseNode(seed: string): NodeAddress {
  if (/^rediss?:\/\//.test(seed)) {
    const u = new URL(seed)
    return { host: u.hostname, port: Number(u.port || 6379) }
  }
  const i = seed.lastIndexOf(':')
  return i > 0 ? { host: seed.slice(0, i), port: Number(seed.slice(i + 1)) } : { host: seed, port: 6379 }
}

/** Credentials, database and TLS of `url` (host and port are the cluster's or the sentinels' business). */
function urlOptions(url: string): RedisOptions {
  const out: RedisOptions = {}
  if (url === '') return out
  const u = new URL(url)
  if (u.username) out.username = decodeURIComponent(u.username)
  if (u.password) out.password = decodeURIComponent(u.password)
  if (u.protocol === 'rediss:') out.tls = {}
  const db = Number(u.pathname.slice(1))
  if (u.pathname.length > 1 && Number.isInteger(db)) out.db = db
  return out
}

function createClient(o: RedisStoreOptions, timeoutMs: number): Client {
  const capMs = o.maxReconnectDelayMs ?? 500
  const common: RedisOptions = {
    commandTimeout: timeoutMs,
    connectTimeout: Math.max(timeoutMs, 2000),
    // No offline queue and no replay: a command either goes out now or fails,
    // and nothing the caller saw fail is executed later behind its back.
    enableOfflineQueue: false,
    autoResendUnfulfilledCommands: false,
    // In-flight commands are rejected as soon as the connection drops.
    maxRetriesPerRequest: 0,
    retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), capMs),
  }
  if (o.cluster && o.cluster.length > 0) {
    const { db: _db, ...redisOptions } = { ...common, ...urlOptions(o.url) }
    return new Cluster(o.cluster.map(parseNode), {
      redisOptions,
      enableOfflineQueue: false,
      clusterRetryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), capMs),
    })
  }
  if (o.sentinels && o.sentinels.length > 0) {
    return new Redis({
      ...common,
      ...urlOptions(o.url),
      sentinels: o.sentinels.map(parseNode),
      name: o.sentinelName ?? 'mymaster',
      // Ask the sentinels again at every reconnect (they name the new master after a failover),
      // and drop the connection as soon as they announce +switch-master.
      sentinelRetryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), capMs),
      failoverDetector: true,
    })
  }
  return new Redis(o.url, common)
}

function str(v: unknown): string {
  if (typeof v === 'string') return v
  if (typeof v === 'number') return String(v)
  if (Buffer.isBuffer(v)) return v.toString('utf8')
  throw new StoreUnavailableError('unexpected reply from store')
}

function num(v: unknown): number {
  const n = Number(str(v))
  if (!Number.isFinite(n)) throw new StoreUnavailableError('unexpected reply from store')
  return n
}

function list(v: unknown): unknown[] {
  if (!Array.isArray(v)) throw new StoreUnavailableError('unexpected reply from store')
  return v as unknown[]
}

function parseEntry(message: string): RevocationEntry | null {
  try {
    const v = JSON.parse(message) as { kind?: unknown; id?: unknown; exp?: unknown }
    if ((v.kind === 'jti' || v.kind === 'grant') && typeof v.id === 'string' && typeof v.exp === 'number') {
      return { kind: v.kind, id: v.id, exp: v.exp }
    }
  } catch {
    // fall through: a message we did not write is ignored
  }
  return null
}

/** Build a DeviceRecord from the device hash's fields (HGETALL as a flat list or object). */
function decodeDevice(fields: Record<string, string>): DeviceRecord | null {
  const status = fields.status as DeviceStatus | undefined
  if (!status || !DEVICE_STATUSES.includes(status)) return null
  return {
    clientId: fields.clientId ?? '',
    userCode: fields.userCode ?? '',
    scope: fields.scope ?? '',
    status,
    sub: fields.sub ?? null,
    authTime: fields.authTime === undefined ? null : Number(fields.authTime),
    expiresAt: Number(fields.expiresAt),
    intervalSec: Number(fields.intervalSec),
    lastPollMs: Number(fields.lastPollMs),
    ...(fields.decidedAtMs === undefined ? {} : { decidedAtMs: Number(fields.decidedAtMs) }),
    ...deviceSignIn(fields.signIn),
  }
}

/** The approving person's amr/acr, kept as one JSON field of the device hash (absent before approval). */
function deviceSignIn(raw: string | undefined): { amr?: string[]; acr?: string } {
  if (raw === undefined || raw === '') return {}
  const v = JSON.parse(raw) as { amr?: unknown; acr?: unknown }
  const amr = Array.isArray(v.amr) && v.amr.every((m) => typeof m === 'string') ? { amr: v.amr as string[] } : {}
  return { ...amr, ...(typeof v.acr === 'string' ? { acr: v.acr } : {}) }
}

function pairs(flat: unknown[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (let i = 0; i + 1 < flat.length; i += 2) out[str(flat[i])] = str(flat[i + 1])
  return out
}

/** {@link Store} on Redis; see the module comment for keys, atomicity and failure behaviour. */
/** hitWindow calls of one tick, answered by one read. */
interface WindowBatch {
  keys: string[]
  waiters: Array<{ resolve: (w: HitWindow) => void; reject: (err: unknown) => void }>
}

export class RedisStore implements Store {
  readonly kind = 'redis' as const

  readonly #opts: RedisStoreOptions
  readonly #clock: Clock
  readonly #prefix: string
  readonly #channel: string
  readonly #timeoutMs: number
  readonly #cluster: boolean
  readonly #main: Link
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
  #closed = false
  /** The failure windows asked for in this tick, read together (hitWindow). */
  #windowBatch: WindowBatch | null = null

  constructor(options: RedisStoreOptions) {
    this.#opts = options
    this.#clock = options.clock
    this.#prefix = options.keyPrefix ?? 'bw:'
    this.#channel = `${this.#prefix}revocations`
    this.#timeoutMs = options.commandTimeoutMs ?? 1000
    this.#cluster = (options.cluster?.length ?? 0) > 0
    this.#main = new Link(createClient(options, this.#timeoutMs), 'main', this.#timeoutMs, options.log, () => this.#feedChanged())
  }

  // -- plumbing --------------------------------------------------------------

  #key(kind: string, tag: string, rest = ''): string {
    return `${this.#prefix}${kind}:{${part(tag)}}${rest}`
  }

  #ttlMs(untilMs: number): number {
    return Math.max(1, Math.ceil(untilMs - this.#clock.now()))
  }

  /** Run commands on the main connection; any failure becomes StoreUnavailableError. */
  async #do<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError('store closed')
    await this.#main.ready()
    try {
      return await fn(this.#main.client)
    } catch (err) {
      throw unavailable(err)
    }
  }

  /** EVALSHA, loading the script with EVAL when the server does not have it yet. */
  async #eval(c: Client, s: LuaScript, keys: string[], args: Arg[]): Promise<unknown> {
    try {
      return await c.evalsha(s.sha, keys.length, ...keys, ...args)
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
        return await c.eval(s.lua, keys.length, ...keys, ...args)
      }
      throw err
    }
  }

  async #putHash(c: Client, key: string, ttlMs: number, fields: Record<string, Arg>): Promise<void> {
    const flat: Arg[] = []
    for (const [k, v] of Object.entries(fields)) flat.push(k, v)
    await this.#eval(c, PUT_HASH, [key], [ttlMs, ...flat])
  }

  /** Keys of a revoke-capable script: the revoked-grants set joins only on a single node. */
  #revokeKeys(grantId: string): string[] {
    const grantKey = this.#key('grant', grantId)
    return this.#cluster ? [grantKey] : [grantKey, this.#key('revoked', 'grant')]
  }

  /** Every key a grant's revocation writes (the family's tombstone and the revoked-grants set). */
  #revocationKeys(grantId: string): string[] {
    return [this.#key('grant', grantId), this.#key('revoked', 'grant')]
  }

  /** Cluster only: write the revocation set entry the grant script could not (no publish). */
  async #durableGrantRevocation(c: Client, grantId: string, until: number): Promise<void> {
    if (!this.#cluster) return
    await this.#eval(c, ADD_REVOCATION, [this.#key('revoked', 'grant')], ['grant', grantId, until, this.#clock.now(), this.#channel, '0'])
  }

  /**
   * Wait until the writes just made to `keys` (over this connection) reached
   * the configured number of replicas, so a failover right after cannot
   * lose them (Redis replicates asynchronously). Short of that in time the
   * call fails with StoreUnavailableError: the write stays on the master (and
   * its message went out, so every running instance already refuses the
   * token), but the caller is not told it is safe, and revocation is
   * idempotent, so sending it again is the cure.
   */
  async #confirmReplicated(c: Client, keys: string[]): Promise<void> {
    const wait = this.#opts.replicaWait
    if (!wait || wait.replicas <= 0) return
    // The master(s) that took the writes: on Cluster, each key's slot master.
    const masters: Redis[] = []
    if (this.#cluster) {
      for (const key of keys) {
        const found = masterOf(c as Cluster, key)
        if (!found) throw new StoreUnavailableError('no master known for a revocation key')
        if (!masters.includes(found.node)) masters.push(found.node)
      }
    } else {
      masters.push(c as Redis)
    }
    // ROLE lists the replicas connected to that master now: with none there is
    // nothing to wait for (and nothing a failover could promote). The cluster
    // client's slot table is not asked: it is refreshed only now and then, so
    // right after a cluster forms (or a replica joins) it can list none.
    const targets: Array<{ node: Redis; want: number }> = []
    for (const node of masters) {
      const role = list(await node.call('ROLE'))
      const connected = str(role[0]) === 'master' && Array.isArray(role[2]) ? role[2].length : 0
      const want = Math.min(wait.replicas, connected)
      if (want > 0) targets.push({ node, want })
    }
    const acked = await Promise.all(targets.map(({ node, want }) => node.call('WAIT', want, wait.timeoutMs)))
    targets.forEach(({ want }, i) => {
      const got = num(acked[i])
      if (got >= want) return
      this.#opts.log?.warn({ replicas: got, wanted: want, timeoutMs: wait.timeoutMs }, 'revocation not confirmed by a replica in time')
      this.#opts.onReplicaWaitTimeout?.()
      throw new StoreUnavailableError('revocation not confirmed by a replica in time')
    })
  }

  async ping(): Promise<void> {
    await this.#do(async (c) => {
      await c.ping()
    })
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#listeners.clear()
    this.#feedListeners.clear()
    await Promise.all([this.#main.close(), this.#sub?.close()])
  }

  // -- authorization codes ---------------------------------------------------

  async putCode(codeHash: string, record: CodeRecord, ttlSec: number): Promise<void> {
    const deadlineMs = Math.max(this.#clock.now() + ttlSec * 1000, record.expiresAt * 1000)
    await this.#do((c) =>
      this.#putHash(c, this.#key('code', codeHash), this.#ttlMs(deadlineMs), {
        r: JSON.stringify(record),
        st: 'i',
        exp: record.expiresAt,
        dl: deadlineMs,
      }),
    )
  }

  async takeCode(codeHash: string): Promise<TakeCodeResult> {
    const reply = list(await this.#do((c) => this.#eval(c, TAKE_CODE, [this.#key('code', codeHash)], [this.#clock.now()])))
    const status = str(reply[0])
    if (status === 'taken') return { status, record: JSON.parse(str(reply[1])) as CodeRecord }
    if (status === 'used') {
      const gid = str(reply[2])
      return { status, record: JSON.parse(str(reply[1])) as CodeRecord, grantId: gid === '' ? null : gid }
    }
    return { status: 'missing' }
  }

  async linkCodeGrant(codeHash: string, grantId: string): Promise<void> {
    await this.#do((c) => this.#eval(c, LINK_CODE_GRANT, [this.#key('code', codeHash)], [grantId]))
  }

  // -- grants and refresh families -------------------------------------------

  async createGrant(grant: GrantRecord, refreshHash: string | null): Promise<void> {
    const ttl = this.#ttlMs(grant.expiresAt * 1000)
    const fields: Record<string, Arg> = {
      g: JSON.stringify(grant),
      exp: grant.expiresAt,
      max: grant.maxAccessExp,
    }
    if (refreshHash !== null) {
      fields.cur = refreshHash
      fields[`t:${refreshHash}`] = Math.floor(this.#clock.now() / 1000)
    }
    await this.#do(async (c) => {
      // Index first: once the family exists its token is findable. One
      // connection runs its commands in the order written, so on a single
      // node both go out together (one round trip); a cluster may put them
      // on different nodes, so there the index is confirmed first.
      const family = this.#key('grant', grant.grantId)
      if (refreshHash === null) await this.#putHash(c, family, ttl, fields)
      else if (this.#cluster) {
        await c.set(this.#key('rt', refreshHash), grant.grantId, 'PX', ttl)
        await this.#putHash(c, family, ttl, fields)
      } else await Promise.all([c.set(this.#key('rt', refreshHash), grant.grantId, 'PX', ttl), this.#putHash(c, family, ttl, fields)])
    })
  }

  /** The family's fields, judged against the clock; null when gone, expired or revoked. */
  async #readFamily(
    c: Client,
    grantId: string,
    tokenHash: string | null,
  ): Promise<{ grant: GrantRecord; current: string | null; issuedAt: number | null } | null> {
    const [g, exp, max, cur, rev, t] = await c.hmget(this.#key('grant', grantId), 'g', 'exp', 'max', 'cur', 'rev', `t:${tokenHash ?? ''}`)
    if (!g || !exp || !max || rev) return null
    if (this.#clock.now() >= Number(exp) * 1000) return null
    const grant = { ...(JSON.parse(g) as GrantRecord), expiresAt: Number(exp), maxAccessExp: Number(max) }
    return { grant, current: cur ?? null, issuedAt: t ? Number(t) : null }
  }

  async getGrant(grantId: string): Promise<GrantRecord | null> {
    return (await this.#do((c) => this.#readFamily(c, grantId, null)))?.grant ?? null
  }

  async noteAccessExp(grantId: string, exp: number): Promise<void> {
    await this.#do((c) => this.#eval(c, NOTE_ACCESS_EXP, [this.#key('grant', grantId)], [exp, this.#clock.now()]))
  }

  async rotateRefresh(oldHash: string, newHash: string | null, newExpiresAt: number, knownGrantId?: string, accessExp?: number): Promise<RotateResult> {
    return this.#do(async (c) => {
      // The script re-checks that oldHash belongs to the family, so a grant id
      // the caller found (findRefresh) saves the index lookup.
      const grantId = knownGrantId ?? (await c.get(this.#key('rt', oldHash)))
      if (grantId === null) return { status: 'missing' }
      const rotate = (): Promise<unknown> =>
        this.#eval(c, ROTATE_REFRESH, this.#revokeKeys(grantId), [
          oldHash,
          newHash ?? '',
          newExpiresAt,
          this.#clock.now(),
          grantId,
          this.#channel,
          accessExp ?? '',
        ])
      let rotated: unknown
      if (newHash === null) rotated = await rotate()
      else {
        // The new token's index before the rotation that issues it: in order on
        // one connection (one round trip on a single node), confirmed first on a cluster.
        const index = (): Promise<unknown> => c.set(this.#key('rt', newHash), grantId, 'PX', this.#ttlMs(newExpiresAt * 1000))
        if (this.#cluster) {
          await index()
          rotated = await rotate()
        } else rotated = (await Promise.all([index(), rotate()]))[1]
      }
      const reply = list(rotated)
      const status = str(reply[0])
      if (status !== 'rotated' && newHash !== null) {
        // The new token was never issued: drop its index key (best effort; it also expires).
        await c.del(this.#key('rt', newHash)).catch(() => 0)
      }
      if (status === 'missing') return { status }
      const grant = { ...(JSON.parse(str(reply[1])) as GrantRecord), expiresAt: num(reply[2]), maxAccessExp: num(reply[3]) }
      if (status === 'rotated') return { status, grant }
      await this.#durableGrantRevocation(c, grantId, num(reply[4]))
      await this.#confirmReplicated(c, this.#revocationKeys(grantId))
      return { status: 'reused', grant }
    })
  }

  async findRefresh(refreshHash: string): Promise<RefreshLookup | null> {
    return this.#do(async (c) => {
      const grantId = await c.get(this.#key('rt', refreshHash))
      if (grantId === null) return null
      const f = await this.#readFamily(c, grantId, refreshHash)
      if (!f || f.issuedAt === null) return null
      return { grant: f.grant, current: f.current === refreshHash, issuedAt: f.issuedAt }
    })
  }

  async revokeGrant(grantId: string, until: number): Promise<void> {
    await this.#do(async (c) => {
      const used = num(await this.#eval(c, REVOKE_GRANT, this.#revokeKeys(grantId), [grantId, until, this.#clock.now(), this.#channel]))
      await this.#durableGrantRevocation(c, grantId, used)
      await this.#confirmReplicated(c, this.#revocationKeys(grantId))
    })
  }

  // -- revocation list -------------------------------------------------------

  async addRevocation(entry: RevocationEntry): Promise<void> {
    const key = this.#key('revoked', entry.kind)
    await this.#do(async (c) => {
      await this.#eval(c, ADD_REVOCATION, [key], [entry.kind, entry.id, entry.exp, this.#clock.now(), this.#channel, '1'])
      await this.#confirmReplicated(c, [key])
    })
  }

  async listRevocations(): Promise<RevocationEntry[]> {
    const nowSec = Math.floor(this.#clock.now() / 1000)
    return this.#do(async (c) => {
      const replies = await Promise.all(KINDS.map((kind) => c.zrangebyscore(this.#key('revoked', kind), nowSec, '+inf', 'WITHSCORES')))
      const out: RevocationEntry[] = []
      KINDS.forEach((kind, i) => {
        const flat = replies[i] ?? []
        for (let j = 0; j + 1 < flat.length; j += 2) out.push({ kind, id: str(flat[j]), exp: num(flat[j + 1]) })
      })
      return out
    })
  }

  /**
   * Entries published by any instance. `onFeed(false)` is called as soon as
   * either connection is lost or found dead (messages may be missed from then
   * on), `onFeed(true)` once both are back and the channel is subscribed anew;
   * right after subscribing it is called with the current state when that is
   * down. The caller resyncs on `true` (see RevocationList).
   */
  async subscribeRevocations(onEntry: (entry: RevocationEntry) => void, onFeed?: (up: boolean) => void): Promise<() => Promise<void>> {
    if (this.#closed) throw new StoreUnavailableError('store closed')
    // Listen before subscribing: a loss during the SUBSCRIBE is not missed.
    const feed = onFeed ? (up: boolean): void => onFeed(up) : null
    if (feed) this.#feedListeners.add(feed)
    try {
      // The feed is up only when both connections are: wait for the command
      // connection too, or a loaded machine reports a loss at subscribe time
      // (the main connection still handshaking) that never happened.
      await Promise.all([this.#ensureSubscribed(), this.#main.ready()])
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

  /** Both connections answer and the channel is subscribed on the current subscriber connection. */
  #feedUp(): boolean {
    const sub = this.#sub
    return !this.#closed && this.#main.up && sub?.up === true && this.#subscribedGeneration === sub.generation
  }

  /** A connection changed state: tell the feed listeners when the feed's state changed. */
  #feedChanged(): void {
    const up = this.#feedUp()
    if (up === this.#feedReported) return
    this.#feedReported = up
    for (const fn of this.#feedListeners) {
      try {
        fn(up)
      } catch (err) {
        this.#opts.log?.error({ err: describe(err) }, 'revocation feed listener failed')
      }
    }
  }

  /** One subscriber connection per store; the channel is subscribed again at every reconnect (by us, so we know when). */
  async #ensureSubscribed(): Promise<void> {
    if (!this.#sub) {
      // autoResubscribe off: #subscribe runs at every 'ready' and marks the generation it acknowledged.
      const client = this.#cluster ? this.#clusterSubscriber() : (this.#main.client as Redis).duplicate({ autoResubscribe: false })
      const sub = new Link(client, 'subscriber', this.#timeoutMs, this.#opts.log, () => this.#feedChanged())
      sub.client.on('ready', () => void this.#subscribe(sub).catch(() => undefined))
      sub.client.on('message', (channel: string, message: string) => {
        if (channel !== this.#channel) return
        const entry = parseEntry(message)
        if (!entry) return
        for (const fn of this.#listeners) {
          try {
            fn({ ...entry })
          } catch (err) {
            this.#opts.log?.error({ err: describe(err) }, 'revocation listener failed')
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

  /**
   * Cluster: one plain connection that moves to the next known node at each
   * reconnect (see redis-cluster.ts). The feed is cluster-wide PUBLISH, not
   * sharded SPUBLISH: the scripts publish in the same step as the write they
   * announce, and a script may only touch its own slot, which SPUBLISH's
   * channel would have to share; revocations are few and small, so the bus
   * carrying each to every node costs nothing that matters; and any node,
   * replicas included, can then serve the subscriber.
   */
  #clusterSubscriber(): Redis {
    const cluster = this.#main.client as Cluster
    const seeds = (this.#opts.cluster ?? []).map(parseNode)
    const candidates = (): NodeAddress[] => {
      const known = cluster.nodes('all').map((n) => ({ host: n.options.host ?? '127.0.0.1', port: n.options.port ?? 6379 }))
      const seen = new Set(known.map((n) => `${n.host}:${n.port}`))
      return [...known, ...seeds.filter((n) => !seen.has(`${n.host}:${n.port}`))]
    }
    const { tls, ...auth } = urlOptions(this.#opts.url)
    return new Redis({
      ...auth,
      commandTimeout: this.#timeoutMs,
      connectTimeout: Math.max(this.#timeoutMs, 2000),
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      autoResubscribe: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (times: number) => Math.min(50 * 2 ** Math.min(times, 10), this.#opts.maxReconnectDelayMs ?? 500),
      Connector: rotatingConnector(candidates, tls === undefined ? undefined : (tls as ConnectionOptions)),
    })
  }

  /** SUBSCRIBE on the subscriber's current connection; concurrent calls on one connection share one. */
  #subscribe(sub: Link): Promise<void> {
    const generation = sub.generation
    if (this.#subscribing !== null && this.#subscribingGeneration === generation) return this.#subscribing
    const run: Promise<void> = sub.client.subscribe(this.#channel).then(
      () => {
        if (this.#subscribing === run) this.#subscribing = null
        if (sub.generation === generation && sub.up) this.#subscribedGeneration = generation
        this.#feedChanged()
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

  // -- opaque access tokens --------------------------------------------------

  async putOpaqueToken(tokenHash: string, record: OpaqueTokenRecord): Promise<void> {
    await this.#do((c) => this.#putHash(c, this.#key('at', tokenHash), this.#ttlMs(record.exp * 1000), { r: JSON.stringify(record), exp: record.exp }))
  }

  async getOpaqueToken(tokenHash: string): Promise<OpaqueTokenRecord | null> {
    const [r, exp] = await this.#do((c) => c.hmget(this.#key('at', tokenHash), 'r', 'exp'))
    if (!r || !exp || this.#clock.now() >= Number(exp) * 1000) return null
    return JSON.parse(r) as OpaqueTokenRecord
  }

  async deleteOpaqueToken(tokenHash: string): Promise<boolean> {
    const n = await this.#do((c) => this.#eval(c, DELETE_OPAQUE, [this.#key('at', tokenHash)], [this.#clock.now()]))
    return num(n) === 1
  }

  // -- device authorization (RFC 8628) ----------------------------------------

  async putDevice(deviceHash: string, record: DeviceRecord): Promise<boolean> {
    const expMs = record.expiresAt * 1000
    const ttl = this.#ttlMs(expMs)
    return this.#do(async (c) => {
      const claimed = num(await this.#eval(c, CLAIM_USER_CODE, [this.#key('ucode', record.userCode)], [deviceHash, expMs, this.#clock.now(), ttl]))
      if (claimed !== 1) return false
      const fields: Record<string, Arg> = {
        clientId: record.clientId,
        userCode: record.userCode,
        scope: record.scope,
        status: record.status,
        expiresAt: record.expiresAt,
        intervalSec: record.intervalSec,
        lastPollMs: record.lastPollMs,
      }
      if (record.sub !== null) fields.sub = record.sub
      if (record.authTime !== null) fields.authTime = record.authTime
      await this.#putHash(c, this.#key('dev', deviceHash), ttl, fields)
      return true
    })
  }

  /** The device hash a live user code points to, or null. */
  async #deviceHashOf(c: Client, userCode: string): Promise<string | null> {
    const [d, e] = await c.hmget(this.#key('ucode', userCode), 'd', 'e')
    return d && e && this.#clock.now() < Number(e) ? d : null
  }

  async getDeviceByUserCode(userCode: string): Promise<{ deviceHash: string; record: DeviceRecord } | null> {
    return this.#do(async (c) => {
      const deviceHash = await this.#deviceHashOf(c, userCode)
      if (deviceHash === null) return null
      const record = decodeDevice(await c.hgetall(this.#key('dev', deviceHash)))
      if (!record || this.#clock.now() >= record.expiresAt * 1000) return null
      return { deviceHash, record }
    })
  }

  async decideDevice(userCode: string, decision: DeviceDecision): Promise<boolean> {
    return this.#do(async (c) => {
      const deviceHash = await this.#deviceHashOf(c, userCode)
      if (deviceHash === null) return false
      const args: Arg[] = decision.approved ? ['1', decision.sub, decision.authTime] : ['0', '', '']
      const signIn = decision.approved ? JSON.stringify({ amr: decision.amr, acr: decision.acr }) : ''
      return num(await this.#eval(c, DECIDE_DEVICE, [this.#key('dev', deviceHash)], [...args, this.#clock.now(), signIn])) === 1
    })
  }

  async pollDevice(deviceHash: string, nowMs: number): Promise<PollResult> {
    const reply = list(await this.#do((c) => this.#eval(c, POLL_DEVICE, [this.#key('dev', deviceHash)], [nowMs, this.#clock.now()])))
    const status = str(reply[0])
    const record = reply.length > 1 ? decodeDevice(pairs(list(reply[1]))) : null
    if (!record) return { status: 'missing' }
    if (status === 'slow_down' || status === 'pending' || status === 'denied' || status === 'approved') {
      return { status, record }
    }
    // 'consumed' is never returned by the script for a live poll; treat anything else as gone.
    return { status: 'missing' }
  }

  // -- browser sessions and consent ------------------------------------------

  /** Session ids are bearer secrets (cookie values): only their hash becomes a key. */
  #sessionKey(sessionId: string): string {
    return this.#key('sess', hashToken(sessionId))
  }

  async #putExpiring(key: string, value: unknown, ttlSec: number): Promise<void> {
    const expMs = this.#clock.now() + ttlSec * 1000
    await this.#do((c) => c.set(key, JSON.stringify({ v: value, e: expMs }), 'PX', this.#ttlMs(expMs)))
  }

  async #getExpiring<T>(key: string): Promise<T | null> {
    const raw = await this.#do((c) => c.get(key))
    if (raw === null) return null
    const { v, e } = JSON.parse(raw) as { v: T; e: number }
    return this.#clock.now() < e ? v : null
  }

  async putSession(sessionId: string, record: SessionRecord, ttlSec: number): Promise<void> {
    await this.#putExpiring(this.#sessionKey(sessionId), record, ttlSec)
  }

  async getSession(sessionId: string): Promise<SessionRecord | null> {
    return this.#getExpiring<SessionRecord>(this.#sessionKey(sessionId))
  }

  async deleteSession(sessionId: string): Promise<void> {
    await this.#do((c) => c.del(this.#sessionKey(sessionId)))
  }

  #consentKey(sub: string, clientId: string): string {
    return this.#key('consent', sub, `:${part(clientId)}`)
  }

  async putConsent(sub: string, clientId: string, scopes: string[], ttlSec: number): Promise<void> {
    await this.#putExpiring(this.#consentKey(sub, clientId), scopes, ttlSec)
  }

  async getConsent(sub: string, clientId: string): Promise<string[] | null> {
    return this.#getExpiring<string[]>(this.#consentKey(sub, clientId))
  }

  // -- what a person allowed (the account page) -------------------------------

  /** Every client's allowance of `sub`: one hash under the sub's tag, like its consent keys. */
  #allowancesKey(sub: string): string {
    return this.#key('apps', sub)
  }

  #allowanceGrantsKey(sub: string, clientId: string): string {
    return this.#key('ugrants', sub, `:${part(clientId)}`)
  }

  /** When (ms) the person last withdrew the client: same tag, so noteAllowance and withdrawal see it atomically. */
  #withdrawnKey(sub: string, clientId: string): string {
    return this.#key('withdrawn', sub, `:${part(clientId)}`)
  }

  async noteAllowance(sub: string, clientId: string, note: AllowanceNote): Promise<boolean> {
    const noted = await this.#do((c) =>
      this.#eval(
        c,
        NOTE_ALLOWANCE,
        [this.#allowancesKey(sub), this.#allowanceGrantsKey(sub, clientId), this.#withdrawnKey(sub, clientId)],
        [clientId, JSON.stringify(note.scopes), note.at, note.grantId ?? '', note.until, this.#clock.now(), note.authorizedAtMs ?? ''],
      ),
    )
    return Number(noted) === 1
  }

  async listAllowances(sub: string): Promise<AllowanceRecord[]> {
    const now = this.#clock.now()
    return this.#do(async (c) => {
      const live: Array<{ clientId: string; scopes: string[]; allowedAt: number }> = []
      for (const [clientId, raw] of Object.entries(await c.hgetall(this.#allowancesKey(sub)))) {
        const v = JSON.parse(raw) as { s?: unknown; at?: unknown; e?: unknown }
        if (typeof v.e !== 'number' || now >= v.e) continue
        // cjson writes an empty list as {}: anything but an array of strings is no scopes.
        const scopes = Array.isArray(v.s) ? v.s.filter((x): x is string => typeof x === 'string') : []
        live.push({ clientId, scopes, allowedAt: typeof v.at === 'number' ? v.at : 0 })
      }
      const nowSec = Math.floor(now / 1000)
      const grants = await Promise.all(live.map((a) => c.zrangebyscore(this.#allowanceGrantsKey(sub, a.clientId), `(${nowSec}`, '+inf')))
      return live.map((a, i) => ({ ...a, grantIds: (grants[i] ?? []).map(str) }))
    })
  }

  async withdrawAllowance(sub: string, clientId: string, rememberSec: number): Promise<string[]> {
    const keys = [this.#allowancesKey(sub), this.#allowanceGrantsKey(sub, clientId), this.#consentKey(sub, clientId), this.#withdrawnKey(sub, clientId)]
    return list(await this.#do((c) => this.#eval(c, WITHDRAW_ALLOWANCE, keys, [clientId, this.#clock.now(), Math.ceil(rememberSec * 1000)]))).map(str)
  }

  // -- registered clients (RFC 7591) -------------------------------------------

  /**
   * The live registrations are counted in one sorted set (client id, score
   * = expiry ms), kept beside the records: a Redis key cannot be counted by
   * pattern in one step, and the set's single key keeps the seat atomic in
   * a cluster too.
   */
  #clientsIndex(): string {
    return this.#key('clients', 'index')
  }

  async putClient(record: RegisteredClientRecord): Promise<void> {
    const expMs = record.expiresAt * 1000
    await this.#do(async (c) => {
      await this.#putHash(c, this.#key('client', record.clientId), this.#ttlMs(expMs), { r: JSON.stringify(record), e: expMs })
      await c.zadd(this.#clientsIndex(), expMs, record.clientId)
    })
  }

  async putClientWithin(record: RegisteredClientRecord, maxLive: number): Promise<ClientSeat> {
    const expMs = record.expiresAt * 1000
    return this.#do(async (c) => {
      const reply = list(await this.#eval(c, SEAT_CLIENT, [this.#clientsIndex()], [this.#clock.now(), maxLive, record.clientId, expMs])).map(num)
      const [seated, live = 0, freeAtMs = 0] = reply
      if (seated !== 1) return { stored: false, live, freeAtMs }
      try {
        await this.#putHash(c, this.#key('client', record.clientId), this.#ttlMs(expMs), { r: JSON.stringify(record), e: expMs })
      } catch (err) {
        // The record was not stored: give the seat back (best effort; it frees itself at expMs anyway).
        await c.zrem(this.#clientsIndex(), record.clientId).catch(() => undefined)
        throw err
      }
      return { stored: true, live, freeAtMs: 0 }
    })
  }

  async countClients(): Promise<number> {
    return num(await this.#do((c) => c.zcount(this.#clientsIndex(), `(${this.#clock.now()}`, '+inf')))
  }

  async getClient(clientId: string): Promise<RegisteredClientRecord | null> {
    const [raw, e] = await this.#do((c) => c.hmget(this.#key('client', clientId), 'r', 'e'))
    if (!raw || !e || this.#clock.now() >= Number(e)) return null
    const record = JSON.parse(raw) as RegisteredClientRecord
    return { ...record, expiresAt: Math.floor(Number(e) / 1000) }
  }

  async touchClient(clientId: string, expiresAt: number): Promise<void> {
    const expMs = expiresAt * 1000
    await this.#do(async (c) => {
      const moved = await this.#eval(c, TOUCH_CLIENT, [this.#key('client', clientId)], [expMs, this.#ttlMs(expMs), this.#clock.now()])
      // XX: a client deleted meanwhile is not counted again; GT: the expiry never moves earlier.
      if (num(moved) === 1) await c.zadd(this.#clientsIndex(), 'XX', 'GT', expMs, clientId)
    })
  }

  async deleteClient(clientId: string): Promise<boolean> {
    const live = await this.getClient(clientId)
    const [removed] = await this.#do((c) => Promise.all([c.del(this.#key('client', clientId)), c.zrem(this.#clientsIndex(), clientId)]))
    return live !== null && removed === 1
  }

  // -- rate limits -----------------------------------------------------------

  async hit(key: string, windowSec: number): Promise<number> {
    return num(await this.#do((c) => this.#eval(c, HIT, [this.#key('rl', key)], [this.#clock.now(), windowSec])))
  }

  async hits(key: string): Promise<number> {
    const [count, reset] = await this.#do((c) => c.hmget(this.#key('rl', key), 'c', 'r'))
    return count && reset && this.#clock.now() < Number(reset) ? Number(count) : 0
  }

  /**
   * On a single node, the windows asked for in the same tick (a FailureLimit
   * checks its per-pair and per-address counters at once) are read with one
   * command, so a client authentication that succeeds costs one round trip
   * and one command. On a cluster the keys may lie in different slots: one
   * HMGET each.
   */
  hitWindow(key: string): Promise<HitWindow> {
    if (this.#cluster) return this.#readWindows([key]).then((w) => w[0] as HitWindow)
    return new Promise<HitWindow>((resolve, reject) => {
      let batch = this.#windowBatch
      if (batch === null) {
        const fresh: WindowBatch = { keys: [], waiters: [] }
        batch = fresh
        this.#windowBatch = fresh
        queueMicrotask(() => {
          this.#windowBatch = null
          this.#readWindows(fresh.keys).then(
            (windows) => {
              for (const [i, w] of fresh.waiters.entries()) w.resolve(windows[i] as HitWindow)
            },
            (err: unknown) => {
              for (const w of fresh.waiters) w.reject(err)
            },
          )
        })
      }
      batch.keys.push(key)
      batch.waiters.push({ resolve, reject })
    })
  }

  async #readWindows(keys: readonly string[]): Promise<HitWindow[]> {
    const flat: Array<string | null> =
      keys.length === 1 || this.#cluster
        ? (await Promise.all(keys.map((k) => this.#do((c) => c.hmget(this.#key('rl', k), 'c', 'r'))))).flat()
        : list(
            await this.#do((c) =>
              this.#eval(
                c,
                HIT_WINDOWS,
                keys.map((k) => this.#key('rl', k)),
                [],
              ),
            ),
          ).map((v) => (typeof v === 'string' ? v : null))
    const now = this.#clock.now()
    return keys.map((_, i) => {
      const count = flat[2 * i]
      const reset = flat[2 * i + 1]
      return count && reset && now < Number(reset) ? { count: Number(count), resetMs: Number(reset) } : { count: 0, resetMs: 0 }
    })
  }

  async clearHits(key: string): Promise<void> {
    await this.#do((c) => c.del(this.#key('rl', key)))
  }

  // -- single-use values -------------------------------------------------------

  async useOnce(key: string, ttlSec: number): Promise<boolean> {
    const reply = await this.#do((c) => this.#eval(c, USE_ONCE, [this.#key('once', key)], [this.#clock.now(), Math.max(1, Math.round(ttlSec * 1000))]))
    return num(reply) === 1
  }

  // -- known browsers ----------------------------------------------------------

  async putKnownBrowser(tokenHash: string, sub: string, ttlSec: number): Promise<void> {
    await this.#putExpiring(this.#key('kb', tokenHash), sub, ttlSec)
  }

  async getKnownBrowser(tokenHash: string): Promise<string | null> {
    return this.#getExpiring<string>(this.#key('kb', tokenHash))
  }

  // -- upstream identity providers ----------------------------------------------

  async putUpstreamLogin(stateHash: string, record: UpstreamLoginRecord, ttlSec: number): Promise<void> {
    await this.#putExpiring(this.#key('upl', stateHash), record, ttlSec)
  }

  async takeUpstreamLogin(stateHash: string): Promise<UpstreamLoginRecord | null> {
    // GETDEL (Redis 6.2): one command, so of concurrent callbacks with one state exactly one gets it.
    const raw = await this.#do((c) => c.getdel(this.#key('upl', stateHash)))
    if (raw === null) return null
    const { v, e } = JSON.parse(raw) as { v: UpstreamLoginRecord; e: number }
    return this.#clock.now() < e ? v : null
  }

  async putUpstreamPerson(sub: string, record: UpstreamPersonRecord, ttlSec: number): Promise<void> {
    await this.#putExpiring(this.#key('person', sub), record, ttlSec)
  }

  async getUpstreamPerson(sub: string): Promise<UpstreamPersonRecord | null> {
    return this.#getExpiring<UpstreamPersonRecord>(this.#key('person', sub))
  }

  // -- authenticator apps (TOTP) --------------------------------------------------

  async putTotp(sub: string, record: TotpRecord): Promise<void> {
    await this.#do((c) => c.set(this.#key('totp', sub), JSON.stringify(record)))
  }

  async getTotp(sub: string): Promise<TotpRecord | null> {
    const raw = await this.#do((c) => c.get(this.#key('totp', sub)))
    return raw === null ? null : (JSON.parse(raw) as TotpRecord)
  }

  async deleteTotp(sub: string): Promise<void> {
    await this.#do((c) => c.del(this.#key('totp', sub)))
  }

  // -- passkeys (WebAuthn) -------------------------------------------------------

  async putPasskeyChallenge(challengeHash: string, record: PasskeyChallengeRecord, ttlSec: number): Promise<void> {
    await this.#putExpiring(this.#key('pkc', challengeHash), record, ttlSec)
  }

  async takePasskeyChallenge(challengeHash: string): Promise<PasskeyChallengeRecord | null> {
    const raw = await this.#do((c) => c.getdel(this.#key('pkc', challengeHash)))
    if (raw === null) return null
    const { v, e } = JSON.parse(raw) as { v: PasskeyChallengeRecord; e: number }
    return this.#clock.now() < e ? v : null
  }

  async addPasskey(record: PasskeyRecord): Promise<boolean> {
    const id = record.credentialId
    // The id's owner first, set only if absent: of two people registering one id, one wins.
    const claimed = await this.#do((c) => c.set(this.#key('pkid', id), record.sub, 'NX'))
    if (claimed === null) return false
    const { counter, backedUp, lastUsedAt, ...rest } = record
    await this.#do((c) =>
      c.hset(this.#key('pk', record.sub), `r:${id}`, JSON.stringify(rest), `c:${id}`, counter, `b:${id}`, backedUp ? 1 : 0, `u:${id}`, lastUsedAt ?? ''),
    )
    return true
  }

  /** A passkey from its fields in `pk:{sub}`, or null when the record field is absent. */
  #passkeyFrom(fields: ReadonlyArray<string | null>): PasskeyRecord | null {
    const [r, c, b, u] = fields
    if (!r) return null
    const rest = JSON.parse(r) as Omit<PasskeyRecord, 'counter' | 'backedUp' | 'lastUsedAt'>
    return { ...rest, counter: Number(c ?? 0), backedUp: b === '1', lastUsedAt: u ? Number(u) : null }
  }

  async getPasskey(credentialId: string): Promise<PasskeyRecord | null> {
    const sub = await this.#do((c) => c.get(this.#key('pkid', credentialId)))
    if (sub === null) return null
    const id = credentialId
    return this.#passkeyFrom(await this.#do((c) => c.hmget(this.#key('pk', sub), `r:${id}`, `c:${id}`, `b:${id}`, `u:${id}`)))
  }

  async listPasskeys(sub: string): Promise<PasskeyRecord[]> {
    const all = await this.#do((c) => c.hgetall(this.#key('pk', sub)))
    const out: PasskeyRecord[] = []
    for (const field of Object.keys(all)) {
      if (!field.startsWith('r:')) continue
      const id = field.slice(2)
      const p = this.#passkeyFrom([all[field] ?? null, all[`c:${id}`] ?? null, all[`b:${id}`] ?? null, all[`u:${id}`] ?? null])
      if (p !== null) out.push(p)
    }
    return out.sort((a, b) => a.createdAt - b.createdAt)
  }

  async renamePasskey(sub: string, credentialId: string, name: string): Promise<boolean> {
    const raw = await this.#do((c) => c.hget(this.#key('pk', sub), `r:${credentialId}`))
    if (!raw) return false
    const record = JSON.stringify({ ...(JSON.parse(raw) as Record<string, unknown>), name })
    return num(await this.#do((c) => this.#eval(c, RENAME_PASSKEY, [this.#key('pk', sub)], [credentialId, record]))) === 1
  }

  async removePasskey(sub: string, credentialId: string): Promise<boolean> {
    const id = credentialId
    const key = this.#key('pk', sub)
    // The record field goes first and alone: of concurrent removals exactly one sees it go.
    const removed = await this.#do((c) => c.hdel(key, `r:${id}`))
    if (removed === 0) return false
    await this.#do((c) => c.hdel(key, `c:${id}`, `b:${id}`, `u:${id}`))
    await this.#do((c) => c.del(this.#key('pkid', id)))
    return true
  }

  async usePasskey(sub: string, credentialId: string, use: { counter: number; backedUp: boolean; at: number }): Promise<PasskeyUseResult> {
    const reply = await this.#do((c) => this.#eval(c, USE_PASSKEY, [this.#key('pk', sub)], [credentialId, use.counter, use.backedUp ? 1 : 0, use.at]))
    const status = str(reply)
    if (status === 'used' || status === 'regressed' || status === 'missing') return status
    throw new StoreUnavailableError(`usePasskey: unexpected reply ${status}`)
  }
}
