/**
 * Remote JWK Sets (RFC 7517 5) of trusted issuers, cached so that token
 * validation never waits on the network in the steady state:
 *
 * - the first fetch starts when the gateway is built; a request waits for it
 *   at most `jwks.first_fetch_wait`, then gets 503 temporarily_unavailable
 *   (our failure to load keys, not the client's token);
 * - a key set is fresh for the response's Cache-Control max-age, clamped to
 *   [`min_ttl`, `max_ttl`], and refetched in the background once 80% of that
 *   has passed (driven by requests, so an idle gateway does not poll);
 * - an unknown `kid` triggers a refetch (key rotation), at most once per
 *   `cooldown`: tokens with random kids cannot make us hammer the issuer;
 * - when fetches fail, the last good set is kept for `stale` past its
 *   freshness, and failures are retried at most once per cooldown.
 *
 * The clients live in a `JwksRegistry` the process keeps across reloads
 * (keyed by issuer id and jwks_uri), so a reload neither refetches nor
 * forgets keys. Only signature keys (`use` absent or `sig`) of asymmetric
 * types are kept; which algorithm a key may verify is decided per token
 * against the issuer's allow-list (`keyAccepts`).
 */
import { Agent, request } from 'undici'
import type { Clock } from '../clock.js'
import type { IssuerConfig } from '../config/validated-config.js'
import { TemporarilyUnavailable } from '../errors.js'
import { parseJwks } from '../keys/jwk-set.js'
import type { Logger } from '../log.js'
import { SpanKind, type Span, type Tracing } from '../telemetry/tracing.js'
import { indexByKid, pickKey, type KeyLookup, type VerificationKey } from '../tokens/verify-jwt.js'

/** A JWK Set larger than this is not a key set we want to parse. */
const MAX_JWKS_BYTES = 512 * 1024
/** With no usable keys at all, retry a failed fetch sooner than the cooldown. */
const KEYLESS_RETRY_MS = 1000
/** Refresh once this share of the freshness lifetime has passed. */
const REFRESH_AHEAD = 0.8

const MAX_AGE = /(?:^|,)\s*max-age\s*=\s*"?(\d+)"?\s*(?:,|$)/i
const NO_CACHE = /(?:^|,)\s*(?:no-store|no-cache)\s*(?:,|$)/i

export type JwksSettings = IssuerConfig['jwks']

/** Freshness in seconds from Cache-Control (RFC 9111 5.2.2.1), clamped to [min, max]. */
export function freshnessSec(cacheControl: string | undefined, settings: Pick<JwksSettings, 'minTtlSec' | 'maxTtlSec'>): number {
  let ttl = settings.minTtlSec
  if (cacheControl !== undefined && !NO_CACHE.test(cacheControl)) {
    const m = MAX_AGE.exec(cacheControl)
    if (m !== null) ttl = Number(m[1])
  }
  return Math.min(settings.maxTtlSec, Math.max(settings.minTtlSec, ttl))
}

async function readLimited(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.length
    if (size > limit) throw new Error(`JWKS larger than ${limit} bytes`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, size).toString('utf8')
}

/** Resolve when `p` settles or after `ms`, whichever comes first. */
function waitAtMost(p: Promise<void>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    timer.unref()
    void p.finally(() => {
      clearTimeout(timer)
      resolve()
    })
  })
}

interface ClientDeps {
  clock: Clock
  log: Logger
  dispatcher: Agent
  tracing?: Tracing | null
}

/** One issuer's remote key set. */
export class JwksClient implements KeyLookup {
  readonly issuerId: string
  readonly uri: string
  readonly #deps: ClientDeps
  #settings: JwksSettings
  #keys: readonly VerificationKey[] = []
  #byKid: ReadonlyMap<string, readonly VerificationKey[]> = new Map()
  /** Epoch ms: refetch in the background after this. */
  #refreshAtMs = 0
  /** Epoch ms: the keys are not used after this (freshness + stale allowance). */
  #usableUntilMs = 0
  /** Epoch ms: no new attempt before this after a failure. */
  #nextAttemptMs = 0
  #lastUnknownKidFetchMs = Number.NEGATIVE_INFINITY
  #inflight: Promise<void> | null = null
  readonly #abort = new AbortController()

  constructor(issuerId: string, uri: string, settings: JwksSettings, deps: ClientDeps) {
    this.issuerId = issuerId
    this.uri = uri
    this.#settings = settings
    this.#deps = deps
  }

  /** The settings in use (those of the config last committed). */
  get settings(): JwksSettings {
    return this.#settings
  }

  /** Take the settings of a reloaded config; the keys are kept. */
  configure(settings: JwksSettings): void {
    this.#settings = settings
  }

  /** Start the first fetch in the background (no-op once keys are loaded or a fetch runs). */
  start(): void {
    if (this.#usableUntilMs === 0 && this.#mayAttempt(this.#deps.clock.now())) void this.#fetch()
  }

  async resolve(kid: string | undefined, alg: string, parent?: Span | null): Promise<VerificationKey | undefined> {
    const now = this.#deps.clock.now()
    if (now >= this.#usableUntilMs) {
      if (!(await this.#waitForKeys(now, parent))) {
        throw new TemporarilyUnavailable("The token issuer's keys cannot be loaded; try again later", {
          cause: `jwks of ${this.issuerId} unavailable`,
          headers: { 'retry-after': '5' },
        })
      }
    } else if (now >= this.#refreshAtMs && this.#mayAttempt(now)) {
      void this.#fetch(parent)
    }
    const key = pickKey(this.#keys, this.#byKid, kid, alg)
    if (key !== undefined || kid === undefined) return key
    // An unknown kid: the issuer may have rotated its keys. Refetch, but at
    // most once per cooldown whatever kids arrive.
    if (this.#inflight !== null) {
      await this.#inflight
    } else if (now - this.#lastUnknownKidFetchMs >= this.#settings.cooldownSec * 1000 && !this.#abort.signal.aborted) {
      this.#lastUnknownKidFetchMs = now
      await this.#fetch()
    } else {
      return undefined
    }
    return pickKey(this.#keys, this.#byKid, kid, alg)
  }

  /** Stop: abort a fetch in flight; the keys already loaded stay usable. */
  close(): void {
    this.#abort.abort()
  }

  #mayAttempt(now: number): boolean {
    return this.#inflight === null && now >= this.#nextAttemptMs && !this.#abort.signal.aborted
  }

  async #waitForKeys(now: number, parent: Span | null | undefined): Promise<boolean> {
    if (this.#mayAttempt(now)) void this.#fetch(parent)
    if (this.#inflight !== null) await waitAtMost(this.#inflight, this.#settings.firstFetchWaitMs)
    return this.#deps.clock.now() < this.#usableUntilMs
  }

  /** @param parent the span of the request that needs the keys (see KeyLookup.resolve); one fetch serves every waiting request. */
  #fetch(parent?: Span | null): Promise<void> {
    if (this.#inflight !== null) return this.#inflight
    const run = this.#load(parent).finally(() => {
      this.#inflight = null
    })
    this.#inflight = run
    return run
  }

  async #load(parent: Span | null | undefined): Promise<void> {
    const { clock, log, dispatcher } = this.#deps
    const settings = this.#settings
    try {
      const fetchKeys = () =>
        request(this.uri, {
          method: 'GET',
          dispatcher,
          headers: { accept: 'application/jwk-set+json, application/json' },
          headersTimeout: settings.timeoutMs,
          bodyTimeout: settings.timeoutMs,
          signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(settings.timeoutMs)]),
        })
      const res = await (this.#deps.tracing?.traced(
        'GET',
        SpanKind.CLIENT,
        { 'http.request.method': 'GET', 'url.full': this.uri, 'bearward.issuer': this.issuerId },
        fetchKeys,
        parent,
      ) ?? fetchKeys())
      if (res.statusCode !== 200) {
        await res.body.dump()
        throw new Error(`answered HTTP ${res.statusCode}`)
      }
      const keys = parseJwks(JSON.parse(await readLimited(res.body, MAX_JWKS_BYTES)))
      if (keys === undefined) throw new Error('the document is not a JWK Set')
      const cacheControl = res.headers['cache-control']
      const ttlMs = freshnessSec(Array.isArray(cacheControl) ? cacheControl.join(',') : cacheControl, settings) * 1000
      const now = clock.now()
      this.#keys = keys
      this.#byKid = indexByKid(keys)
      this.#refreshAtMs = now + ttlMs * REFRESH_AHEAD
      this.#usableUntilMs = now + ttlMs + settings.staleSec * 1000
      this.#nextAttemptMs = 0
      log.debug({ issuer: this.issuerId, keys: keys.length, ttl_sec: ttlMs / 1000 }, 'JWKS loaded')
    } catch (err) {
      const now = clock.now()
      const usable = now < this.#usableUntilMs
      this.#nextAttemptMs = now + (usable ? settings.cooldownSec * 1000 : Math.min(settings.cooldownSec * 1000, KEYLESS_RETRY_MS))
      log.warn(
        { issuer: this.issuerId, jwks_uri: this.uri, reason: err instanceof Error ? err.message : String(err) },
        usable ? 'JWKS fetch failed; still using the keys loaded before' : 'JWKS fetch failed; tokens of this issuer cannot be verified',
      )
    }
  }
}

/** Where a gateway gets the JWKS client of an issuer. */
export interface JwksSource {
  client(issuer: IssuerConfig & { jwksUri: string }): JwksClient
}

function clientKey(issuer: IssuerConfig & { jwksUri: string }): string {
  return `${issuer.id}\n${issuer.jwksUri}`
}

/**
 * The process's JWKS clients, kept across reloads. The app creates one and
 * passes it to every `createGateway` through a {@link JwksStage}; `close()`
 * at shutdown.
 */
export class JwksRegistry implements JwksSource {
  readonly #clock: Clock
  readonly #log: Logger
  readonly #clients = new Map<string, JwksClient>()
  readonly #dispatcher = new Agent({ keepAliveTimeout: 30_000 })

  readonly #tracing: Tracing | null

  /** @param tracing records a fetch made while a traced request waits for it as a span of that request */
  constructor(clock: Clock, log: Logger, tracing: Tracing | null = null) {
    this.#clock = clock
    this.#log = log
    this.#tracing = tracing
  }

  /**
   * The client for an issuer with a `jwks_uri`, created on first use and
   * started; settings follow the latest config. Applies at once: a Runtime
   * under construction uses `stage()` instead.
   */
  client(issuer: IssuerConfig & { jwksUri: string }): JwksClient {
    const stage = this.stage()
    const client = stage.client(issuer)
    stage.commit()
    return client
  }

  /** The live client for an issuer, if one is registered (no side effect). */
  peek(issuer: IssuerConfig & { jwksUri: string }): JwksClient | undefined {
    return this.#clients.get(clientKey(issuer))
  }

  /**
   * A set of changes a Runtime under construction wants (new clients, new
   * settings), applied by `commit()` when that Runtime is swapped in, or
   * discarded by `abort()` when its build fails: a refused reload leaves
   * the clients the running Runtime uses as they were.
   */
  stage(): JwksStage {
    return new JwksStage(
      (key) => this.#clients.get(key),
      (issuer) =>
        new JwksClient(issuer.id, issuer.jwksUri, issuer.jwks, { clock: this.#clock, log: this.#log, dispatcher: this.#dispatcher, tracing: this.#tracing }),
      (key, client) => this.#clients.set(key, client),
    )
  }

  async close(): Promise<void> {
    for (const client of this.#clients.values()) client.close()
    this.#clients.clear()
    await this.#dispatcher.close()
  }
}

/** See {@link JwksRegistry.stage}. */
export class JwksStage implements JwksSource {
  readonly #existing: (key: string) => JwksClient | undefined
  readonly #create: (issuer: IssuerConfig & { jwksUri: string }) => JwksClient
  readonly #register: (key: string, client: JwksClient) => void
  /** Per key: the client the new Runtime uses and the settings it wants. */
  readonly #wanted = new Map<string, { client: JwksClient; settings: JwksSettings; created: boolean }>()
  #done = false

  constructor(
    existing: (key: string) => JwksClient | undefined,
    create: (issuer: IssuerConfig & { jwksUri: string }) => JwksClient,
    register: (key: string, client: JwksClient) => void,
  ) {
    this.#existing = existing
    this.#create = create
    this.#register = register
  }

  /** The client the new Runtime will use; nothing live changes until commit(). */
  client(issuer: IssuerConfig & { jwksUri: string }): JwksClient {
    if (this.#done) throw new Error('JWKS stage already committed or aborted')
    const key = clientKey(issuer)
    const staged = this.#wanted.get(key)
    if (staged !== undefined) {
      staged.settings = issuer.jwks
      return staged.client
    }
    const existing = this.#existing(key)
    const client = existing ?? this.#create(issuer)
    this.#wanted.set(key, { client, settings: issuer.jwks, created: existing === undefined })
    return client
  }

  /** Register new clients, apply new settings, start first fetches. */
  commit(): void {
    if (this.#done) return
    this.#done = true
    for (const [key, { client, settings, created }] of this.#wanted) {
      if (created) this.#register(key, client)
      else client.configure(settings)
      client.start()
    }
  }

  /** Discard: close the clients this stage created; existing ones are untouched. */
  abort(): void {
    if (this.#done) return
    this.#done = true
    for (const { client, created } of this.#wanted.values()) if (created) client.close()
  }
}
