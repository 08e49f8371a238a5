import { createServer, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { execFile } from 'node:child_process'
import { mkdtemp, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Duplex } from 'node:stream'
import { pino } from 'pino'
import { parseConfig } from '../../src/config/load.js'
import type { GatewayConfig, RouteConfig } from '../../src/config/validated-config.js'
import type { RequestContext } from '../../src/context.js'
import type { Logger } from '../../src/log.js'
import { UpstreamProxy } from '../../src/gateway/upstream/proxy.js'
import { planUpstreams, type UpstreamPlan } from '../../src/gateway/plan/upstreams.js'
import { TrustedProxies } from '../../src/http/trusted-proxies.js'
import type { CredentialDeps } from '../../src/gateway/upstream-token/credential.js'
import type { OpenExchanges } from '../../src/gateway/open-exchanges.js'
import type { UpstreamTargets } from '../../src/gateway/upstream/targets.js'
import type { ForwardRequest } from '../../src/gateway/forward-request.js'
import type { TokenIdentity } from '../../src/gateway/token-identity.js'
import { contextExtras } from '../helpers/trace.js'
import { closeServer, listen as listenOnPortZero } from '../helpers/http.js'

/** Helpers shared by the proxy tests: real servers on 127.0.0.1, port 0. */

const execFileAsync = promisify(execFile)

export const silentLog: Logger = pino({ level: 'silent' })

export const IDENTITY_HEADERS = {
  subject: 'X-Auth-Subject',
  clientId: 'X-Auth-Client-Id',
  scope: 'X-Auth-Scope',
  issuer: 'X-Auth-Issuer',
  claims: {},
}

/**
 * The route and gateway settings the proxy tests start from: what the real
 * loader makes of a minimal file (so the defaults are the reader's, not a
 * copy of them), with the identity headers above.
 */
const LOADED = parseConfig(
  `public_url: http://gateway.test
authorization_server: { clients: [] }
gateway:
  identity_headers: { subject: ${IDENTITY_HEADERS.subject}, client_id: ${IDENTITY_HEADERS.clientId}, scope: ${IDENTITY_HEADERS.scope}, issuer: ${IDENTITY_HEADERS.issuer} }
routes:
  - { name: test, match: { path: / }, upstream: "http://127.0.0.1:9", token: jwt, timeouts: { connect: 2s, headers: 5s, idle: 5s } }
`,
  '<proxy-helpers>',
  {},
)
const BASE_ROUTE = LOADED.routes[0] as RouteConfig

/**
 * A route as the loader makes it, with `overrides` on top: the proxy's own
 * unit tests also set what the loader would refuse (an ftp upstream, a CA
 * file that does not exist) to see the proxy's defence in depth.
 */
export function routeConfig(overrides: Partial<RouteConfig> & { upstream: string }): RouteConfig {
  return {
    ...BASE_ROUTE,
    ...overrides,
    audiences: overrides.audiences ?? (overrides.audience === undefined ? BASE_ROUTE.audiences : [overrides.audience]),
  }
}

/** The gateway settings as the loader makes them, with `overrides` on top. */
export function gatewayConfig(overrides: Partial<GatewayConfig> = {}): GatewayConfig {
  return { ...LOADED.gateway, ...overrides }
}

export const alice: TokenIdentity = {
  issuerId: 'self',
  issuer: 'http://gateway.test',
  sub: 'alice',
  clientId: 'web',
  scopes: ['orders:read', 'orders:write'],
  jti: 'jti-1',
  grantId: null,
  exp: 2_000_000_000,
  jkt: null,
  x5t: null,
  claims: { sub: 'alice', email: 'alice@example.com' },
}

export interface Listening {
  url: string
  port: number
  server: Server
  close(): Promise<void>
}

export async function listen(server: Server): Promise<Listening> {
  const { port, url } = await listenOnPortZero(server)
  return {
    url,
    port,
    server,
    close: () => closeServer(server),
  }
}

/** An upstream answering with `handler`. */
export function startUpstream(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<Listening> {
  return listen(createServer(handler))
}

/**
 * The proxy of a gateway whose routes are `routes`, and each route's
 * upstream step (what the gateway's plan hands the proxy with a request).
 */
export function proxyFor(
  routes: readonly RouteConfig[],
  gateway: GatewayConfig = gatewayConfig(),
  options: { signing?: CredentialDeps | null; exchanges?: OpenExchanges | null; targets?: UpstreamTargets } = {},
): { proxy: UpstreamProxy; upstreamOf: (route: RouteConfig) => UpstreamPlan } {
  const { upstreams, pools, balancers } = planUpstreams(routes, gateway, new TrustedProxies(gateway.trustedProxies), options.signing ?? null, options.targets)
  const proxy = new UpstreamProxy(pools, silentLog, options.exchanges ?? null, null, balancers)
  const upstreamOf = (route: RouteConfig): UpstreamPlan => {
    const upstream = upstreams[routes.indexOf(route)]
    if (upstream === undefined) throw new Error(`route ${route.name} is not one of the proxy's`)
    return upstream
  }
  return { proxy, upstreamOf }
}

export interface Decision {
  route?: RouteConfig
  identity?: TokenIdentity | null
  body?: Buffer | null
  path?: string
  query?: string
}

/**
 * A gateway stand-in: every request and upgrade is forwarded to the first
 * route (or what `decide` picks), the way the policy core hands it over.
 */
export async function startProxy(
  routes: readonly RouteConfig[],
  gateway: GatewayConfig = gatewayConfig(),
  decide: (req: IncomingMessage) => Decision = () => ({}),
  targets?: UpstreamTargets,
): Promise<Listening & { proxy: UpstreamProxy; forwards: Promise<void>[]; upstreamOf: (route: RouteConfig) => UpstreamPlan }> {
  const { proxy, upstreamOf } = proxyFor(routes, gateway, targets === undefined ? {} : { targets })
  const forwards: Promise<void>[] = []
  const fwdFor = (req: IncomingMessage): { fwd: ForwardRequest; ctx: RequestContext } => {
    const raw = req.url ?? '/'
    const q = raw.indexOf('?')
    const d = decide(req)
    const rawPath = q === -1 ? raw : raw.slice(0, q)
    const rawQuery = q === -1 ? '' : raw.slice(q + 1)
    const route = d.route ?? (routes[0] as RouteConfig)
    return {
      fwd: {
        route,
        upstream: upstreamOf(route),
        path: d.path ?? rawPath,
        query: d.query ?? rawQuery,
        identity: d.identity === undefined ? alice : d.identity,
        body: d.body ?? null,
      },
      ctx: { id: 'req-1', log: silentLog, rawPath, rawQuery, routeLabel: route.name, closeListener: null, ...contextExtras() },
    }
  }
  const server = createServer((req, res) => {
    const { fwd, ctx } = fwdFor(req)
    // As src/app.ts does: the response's one close listener tells the proxy.
    forwards.push(
      new Promise<void>((resolve) =>
        res.on('close', () => {
          ctx.closeListener?.onResponseClose()
          resolve()
        }),
      ),
    )
    proxy.forward(req, res, fwd, ctx)
  })
  // Upgraded sockets leave the server's bookkeeping: close() must end them itself.
  const upgraded = new Set<Duplex>()
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    upgraded.add(socket)
    socket.once('close', () => upgraded.delete(socket))
    const { fwd, ctx } = fwdFor(req)
    proxy.upgrade(req, socket, head, fwd, ctx)
  })
  const listening = await listen(server)
  return {
    ...listening,
    proxy,
    forwards,
    upstreamOf,
    close: async () => {
      for (const socket of upgraded) socket.destroy()
      await listening.close()
      await proxy.close()
    },
  }
}

export interface Reply {
  status: number
  headers: IncomingHttpHeaders
  rawHeaders: string[]
  trailers: NodeJS.Dict<string>
  body: Buffer
  text: string
}

/** One request with node:http (not undici, so the client is independent of the code under test). */
export function send(
  url: string,
  options: { method?: string; path?: string; headers?: Record<string, string | string[]>; body?: string | Buffer } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const target = new URL(options.path ?? '/', url)
    const req = httpRequest(target, { method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const body = Buffer.concat(chunks)
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          rawHeaders: res.rawHeaders,
          trailers: res.trailers,
          body,
          text: body.toString('utf8'),
        })
      })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

/** Header names in a raw header list, lower-cased. */
export function rawNames(rawHeaders: readonly string[]): string[] {
  return rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase())
}

/**
 * A self-signed certificate for 127.0.0.1 and localhost, made with openssl in
 * a fresh temp directory; the certificate is its own CA.
 */
export async function selfSignedCert(): Promise<{ dir: string; certFile: string; keyFile: string; cert: string; key: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'bearward-proxy-tls-'))
  const certFile = join(dir, 'cert.pem')
  const keyFile = join(dir, 'key.pem')
  await execFileAsync('openssl', [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    keyFile,
    '-out',
    certFile,
    '-days',
    '1',
    '-subj',
    '/CN=localhost',
    '-addext',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ])
  return { dir, certFile, keyFile, cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8') }
}
