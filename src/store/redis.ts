/**
 * The shared store on Redis (single node, Sentinel or Cluster) via ioredis:
 * the record of every family's Redis implementation over one command
 * connection (redis/connection.ts) and one revocation feed (redis/pubsub.ts).
 *
 * Atomicity: every transition documented "atomic" in the families' types is
 * one command or one Lua script (beside the family's redis.ts). Keys a script
 * touches share a hash tag (`{...}`), so scripts are cluster-safe. Each
 * family's module comment lists its keys (`p` = keyPrefix, default `bw:`).
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
import { RedisAllowances } from './allowances/redis.js'
import { RedisClients } from './clients/redis.js'
import { RedisCodes } from './codes/redis.js'
import { RedisDeliveries } from './deliveries/redis.js'
import { RedisDevices } from './devices/redis.js'
import { RedisGrants } from './grants/redis.js'
import { RedisKnownBrowsers } from './known-browsers/redis.js'
import { RedisOpaqueTokens } from './opaque-tokens/redis.js'
import { RedisPasskeys } from './passkeys/redis.js'
import { RedisPeople } from './people/redis.js'
import { RedisAdminClients } from './admin-clients/redis.js'
import { RedisPushedRequests } from './pushed-requests/redis.js'
import { RedisRateLimits } from './rate-limits/redis.js'
import { RedisConnection } from './redis/connection.js'
import type { RedisStoreOptions } from './redis/options.js'
import { RevocationFeed } from './redis/pubsub.js'
import { RedisRevocations } from './revocations/redis.js'
import { RedisConsents, RedisSessions } from './sessions/redis.js'
import { RedisSingleUse } from './single-use/redis.js'
import { RedisMcpSessions } from './mcp-sessions/redis.js'
import { RedisTotp } from './totp/redis.js'
import type { Store } from './types.js'
import { RedisUpstream } from './upstream/redis.js'
import { RedisTrafficLimits } from './traffic-limits/redis.js'
import { RedisSignals } from './signals/redis.js'

export { HEARTBEAT_DEADLINE_MS, HEARTBEAT_INTERVAL_MS } from './redis/heartbeat.js'
export type { RedisStoreOptions } from './redis/options.js'
export type { StoreLog } from './redis/replies.js'

/** {@link Store} on Redis. */
export class RedisStore implements Store {
  readonly kind = 'redis' as const
  readonly codes: RedisCodes
  readonly grants: RedisGrants
  readonly revocations: RedisRevocations
  readonly opaqueTokens: RedisOpaqueTokens
  readonly devices: RedisDevices
  readonly sessions: RedisSessions
  readonly consents: RedisConsents
  readonly allowances: RedisAllowances
  readonly clients: RedisClients
  readonly rateLimits: RedisRateLimits
  readonly singleUse: RedisSingleUse
  readonly knownBrowsers: RedisKnownBrowsers
  readonly upstream: RedisUpstream
  readonly totp: RedisTotp
  readonly passkeys: RedisPasskeys
  readonly mcpSessions: RedisMcpSessions
  readonly pushedRequests: RedisPushedRequests
  readonly trafficLimits: RedisTrafficLimits
  readonly signals: RedisSignals
  readonly deliveries: RedisDeliveries
  readonly people: RedisPeople
  readonly adminClients: RedisAdminClients

  readonly #r: RedisConnection
  readonly #feed: RevocationFeed

  constructor(options: RedisStoreOptions) {
    // The feed's state follows the command connection's too: it is told of each change.
    let feed: RevocationFeed | null = null
    const r = new RedisConnection(options, () => feed?.changed())
    feed = new RevocationFeed(r)
    this.#r = r
    this.#feed = feed
    this.codes = new RedisCodes(r)
    this.grants = new RedisGrants(r)
    this.revocations = new RedisRevocations(r, feed)
    this.opaqueTokens = new RedisOpaqueTokens(r)
    this.devices = new RedisDevices(r)
    this.sessions = new RedisSessions(r)
    this.consents = new RedisConsents(r)
    this.allowances = new RedisAllowances(r)
    this.clients = new RedisClients(r)
    this.rateLimits = new RedisRateLimits(r)
    this.singleUse = new RedisSingleUse(r)
    this.knownBrowsers = new RedisKnownBrowsers(r)
    this.upstream = new RedisUpstream(r)
    this.totp = new RedisTotp(r)
    this.passkeys = new RedisPasskeys(r)
    this.mcpSessions = new RedisMcpSessions(r)
    this.pushedRequests = new RedisPushedRequests(r)
    this.trafficLimits = new RedisTrafficLimits(r)
    this.signals = new RedisSignals(r)
    this.deliveries = new RedisDeliveries(r)
    this.people = new RedisPeople(r)
    this.adminClients = new RedisAdminClients(r)
  }

  async ping(): Promise<void> {
    await this.#r.do(async (c) => {
      await c.ping()
    })
  }

  async close(): Promise<void> {
    if (this.#r.closed) return
    await Promise.all([this.#r.close(), this.#feed.close()])
  }
}
