/**
 * A real gateway for tests: the config parsed from YAML as users write it,
 * the real UpstreamProxy, a real upstream on port 0, the memory store, the
 * real RevocationList, a ManualClock and a captured log. Requests go out over
 * node:http with the path written verbatim (fetch would normalize it first).
 */
import { buildFaceDeps } from '../../src/face-deps.js'
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { randomUUID } from 'node:crypto'
import { SignJWT, type JWTPayload } from 'jose'
import { ManualClock } from '../../src/clock.js'
import { parseConfig } from '../../src/config/load.js'
import type { Config } from '../../src/config/types.js'
import type { FaceDeps, GatewayFace, RequestContext } from '../../src/context.js'
import { NotFound, OAuthError, ServerError } from '../../src/errors.js'
import { createGateway } from '../../src/gateway/gateway.js'
import { JwksRegistry } from '../../src/gateway/jwks-client.js'
import { sendError } from '../../src/http/reply.js'
import { assertTargetAgreesWithHost } from '../../src/http/request-checks.js'
import { splitTarget } from '../../src/gateway/normalize.js'
import { generatePrivateJwk, KeySet, signingKeyFromJwk, type SigningAlg, type SigningKey } from '../../src/keys/keyset.js'
import { createLogger } from '../../src/log.js'
import { Metrics } from '../../src/metrics.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RevocationList } from '../../src/store/revocation-list.js'
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
  /** Keys of the built-in issuer; default one ES256 key. null: no authorization server. */
  keys?: SigningKey[] | null
  clock?: ManualClock
  jwks?: JwksRegistry
  /** Serve with Node's lenient parser (lets smuggling-shaped requests through to the gateway). */
  insecureHTTPParser?: boolean
}

export interface Harness {
  url: string
  config: Config
  clock: ManualClock
  store: MemoryStore
  revocations: RevocationList
  metrics: Metrics
  gateway: GatewayFace
  key: SigningKey
  upstream: { url: string; seen: SeenRequest[] }
  /** Everything the gateway logged, one JSON line each. */
  logs: string[]
  send(target: string, options?: SendOptions): Promise<Reply>
  /** GET with `Authorization: Bearer <token>`. */
  get(target: string, token: string, headers?: Record<string, string>): Promise<Reply>
  mint(o?: Partial<MintOptions>): Promise<string>
  close(): Promise<void>
}

/** Serve a gateway the way src/app.ts dispatches to it (404 when not handled, upgrades included). */
async function serve(gateway: GatewayFace, log: ReturnType<typeof createLogger>, insecureHTTPParser: boolean): Promise<{ url: string; server: Server }> {
  const context = (raw: string): RequestContext => {
    const target = splitTarget(raw)
    return { id: randomUUID(), log, rawPath: target.rawPath, rawQuery: target.rawQuery, targetHost: target.host, routeLabel: 'unmatched', closeListener: null }
  }
  const server = createServer({ insecureHTTPParser }, (req, res) => {
    const ctx = context(req.url ?? '/')
    res.on('close', () => ctx.closeListener?.onResponseClose())
    try {
      assertTargetAgreesWithHost(req, ctx.targetHost)
      if (!gateway.handle(req, res, ctx)) sendError(res, new NotFound())
    } catch (err) {
      sendError(res, err instanceof OAuthError ? err : new ServerError())
    }
  })
  server.on('upgrade', (req, socket, head: Buffer) => {
    gateway
      .handleUpgrade(req, socket, head, context(req.url ?? '/'))
      .then((handled) => {
        if (!handled) socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      })
      .catch(() => socket.destroy())
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

export async function startGateway(o: HarnessOptions): Promise<Harness> {
  const clock = o.clock ?? new ManualClock(Date.UTC(2026, 0, 1))
  const upstream = await startUpstream('up')
  const keys = o.keys === undefined ? [await newKey('ES256', 'self-1')] : o.keys
  const yaml = `
listen: 127.0.0.1:0
public_url: ${PUBLIC_URL}
${keys === null ? '' : 'authorization_server:\n  clients: []\n'}
${o.extra ?? ''}
routes:
${o.routes(upstream.url)}
`
  const config = parseConfig(yaml, '<inline>', {})
  const logs: string[] = []
  const log = createLogger('debug', { write: (line: string) => void logs.push(line) })
  const store = new MemoryStore(clock, { sweepIntervalMs: 0 })
  const revocations = new RevocationList(store, clock, log, 3600)
  await revocations.start()
  const metrics = new Metrics()
  const keySet = keys === null ? null : new KeySet(keys, false)
  const deps: FaceDeps = buildFaceDeps({ clock, log, store, revocations, metrics }, config, keySet)
  const jwks = o.jwks ?? new JwksRegistry(clock, log)
  const gateway = createGateway(deps, { jwks })
  const { url, server } = await serve(gateway, log, o.insecureHTTPParser ?? false)
  const key = keys?.[0] ?? (await newKey())
  const harness: Harness = {
    url,
    config,
    clock,
    store,
    revocations,
    metrics,
    gateway,
    key,
    upstream,
    logs,
    send: (target, options) => send(url, target, options),
    get: (target, token, headers = {}) => send(url, target, { headers: { authorization: `Bearer ${token}`, ...headers } }),
    mint: (m = {}) => mint(clock, { key, ...m }),
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      await gateway.close()
      if (o.jwks === undefined) await jwks.close()
      await revocations.stop()
      await store.close()
      await upstream.close()
    },
  }
  return harness
}
