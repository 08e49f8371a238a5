/**
 * A real gateway for tests: the config parsed from YAML as users write it,
 * served through the App's dispatcher (test/helpers/serve-runtime.ts), a
 * real upstream on port 0, the memory store, the real RevocationList, a
 * ManualClock and a captured log. Requests go out over node:http with the
 * path written verbatim (fetch would normalize it first).
 */
import { request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http'
import { connect } from 'node:net'
import { randomUUID } from 'node:crypto'
import { SignJWT, type JWTPayload } from 'jose'
import { ManualClock } from '../../src/clock.js'
import type { Config } from '../../src/config/validated-config.js'
import type { GatewayFace } from '../../src/context.js'
import { generatePrivateJwk, signingKeyFromJwk, type SigningAlg, type SigningKey } from '../../src/keys/keyset.js'
import type { Metrics } from '../../src/metrics.js'
import type { ProcessState } from '../../src/runtime.js'
import type { RevocationList } from '../../src/store/revocation-list.js'
import { serveRuntime } from '../helpers/serve-runtime.js'
import { MemoryStore } from '../../src/store/memory.js'
import { startUpstream, type SeenRequest } from '../helpers/upstream.js'

export const PUBLIC_URL = 'http://gw.test'

export async function newKey(alg: SigningAlg = 'ES256', kid?: string): Promise<SigningKey> {
  return signingKeyFromJwk(await generatePrivateJwk(alg, kid))
}

export interface Reply {
  status: number
  headers: IncomingHttpHeaders
  body: string
  json(): Record<string, unknown>
}

export interface SendOptions {
  method?: string
  headers?: Record<string, string | string[]>
  body?: string | Buffer
}

/** One request with the target sent exactly as given. */
export function send(base: string, target: string, options: SendOptions = {}): Promise<Reply> {
  const url = new URL(base)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method: options.method ?? 'GET', path: target, headers: options.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8')
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body) as Record<string, unknown> })
        })
        res.on('error', reject)
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

/** Raw bytes over a socket; resolves with everything the server sent before closing (or after `waitMs`). */
export function sendRaw(base: string, bytes: string, waitMs = 2000): Promise<string> {
  const url = new URL(base)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname)
    const chunks: Buffer[] = []
    const timer = setTimeout(() => socket.destroy(), waitMs)
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(Buffer.concat(chunks).toString('latin1'))
    })
    socket.on('error', reject)
    socket.write(bytes)
  })
}

export interface MintOptions {
  key: SigningKey
  iss?: string
  aud?: string | string[]
  /** Seconds from the clock's now. */
  expIn?: number
  scope?: string
  claims?: JWTPayload
  header?: Record<string, unknown>
}

/** A JWT access token (RFC 9068) signed in the test, times taken from `clock`. */
export function mint(clock: ManualClock, o: MintOptions): Promise<string> {
  const now = Math.floor(clock.now() / 1000)
  return new SignJWT({ client_id: 'web', scope: o.scope ?? 'orders:read', jti: randomUUID(), sub: 'alice', ...o.claims })
    .setProtectedHeader({ alg: o.key.alg, kid: o.key.kid, typ: 'at+jwt', ...o.header })
    .setIssuer(o.iss ?? PUBLIC_URL)
    .setAudience(o.aud ?? PUBLIC_URL)
    .setIssuedAt(now)
    .setExpirationTime(now + (o.expIn ?? 600))
    .sign(o.key.privateKey)
}

export interface HarnessOptions {
  /** YAML of `routes:` items (indented by two spaces), given the upstream URL. */
  routes: (upstream: string) => string
  /** Extra top-level YAML (issuers:, gateway:). */
  extra?: string
  /** The `log:` section as flow YAML (default `{ level: debug }`). */
  log?: string
  /** Keys of the built-in issuer (written inline into the config, the first signs); default one ES256 key. null: no authorization server. */
  keys?: SigningKey[] | null
  clock?: ManualClock
  /** Process state owned by the test, shared by gateways built one after another (the remote JWKS caches a reload keeps). */
  state?: ProcessState
  /** Serve with Node's lenient parser (lets smuggling-shaped requests through to the gateway). */
  insecureHTTPParser?: boolean
  /** How the upstream answers (it records every request either way); default JSON naming itself. */
  upstreamHandler?: Parameters<typeof startUpstream>[1]
}

export interface Harness {
  url: string
  config: Config
  clock: ManualClock
  store: MemoryStore
  revocations: RevocationList
  metrics: Metrics
  gateway: GatewayFace
  /** The HTTP server the gateway answers on (to watch its connections). */
  server: Server
  key: SigningKey
  upstream: { url: string; seen: SeenRequest[]; server: Server }
  /** Everything the server logged, one JSON line each. */
  readonly logs: string[]
  send(target: string, options?: SendOptions): Promise<Reply>
  /** GET with `Authorization: Bearer <token>`. */
  get(target: string, token: string, headers?: Record<string, string>): Promise<Reply>
  mint(o?: Partial<MintOptions>): Promise<string>
  close(): Promise<void>
}

/** A signing key as the config's inline `jwk:` (its private members, kid, alg). */
function inlineKey(key: SigningKey): string {
  return JSON.stringify({ ...key.privateKey.export({ format: 'jwk' }), kid: key.kid, alg: key.alg })
}

/**
 * The gateway (and, unless `keys: null`, the authorization server beside it)
 * from YAML, served through the App's dispatcher (test/helpers/serve-runtime.ts)
 * in front of a recording upstream.
 */
export async function startGateway(o: HarnessOptions): Promise<Harness> {
  const upstream = await startUpstream('up', o.upstreamHandler)
  const keys = o.keys === undefined ? [await newKey('ES256', 'self-1')] : o.keys
  const yaml = `
listen: 127.0.0.1:0
public_url: ${PUBLIC_URL}
log: ${o.log ?? '{ level: debug }'}
${keys === null ? '' : `authorization_server:\n  clients: []\n  keys:\n${keys.map((k) => `    - jwk: ${inlineKey(k)}\n`).join('')}`}
${o.extra ?? ''}
routes:
${o.routes(upstream.url)}
`
  let memory: MemoryStore | null = null
  const served = await serveRuntime(yaml, {
    clock: o.clock ?? new ManualClock(Date.UTC(2026, 0, 1)),
    store: (clock) => {
      memory = new MemoryStore(clock, { sweepIntervalMs: 0 })
      return memory
    },
    state: o.state,
    logLevel: 'debug',
    insecureHTTPParser: o.insecureHTTPParser ?? false,
  }).catch(async (err: unknown) => {
    await upstream.close()
    throw err
  })
  const store: MemoryStore | null = memory
  if (store === null) throw new Error('the store was not made')
  const { url, clock } = served
  const key = keys?.[0] ?? (await newKey())
  return {
    url,
    config: served.config,
    clock,
    store,
    revocations: served.revocations,
    metrics: served.metrics,
    gateway: served.runtime.gateway,
    server: served.server,
    key,
    upstream,
    get logs(): string[] {
      return served.logs.map((line) => JSON.stringify(line))
    },
    send: (target, options) => send(url, target, options),
    get: (target, token, headers = {}) => send(url, target, { headers: { authorization: `Bearer ${token}`, ...headers } }),
    mint: (m = {}) => mint(clock, { key, ...m }),
    close: async () => {
      await served.close()
      await upstream.close()
    },
  }
}
