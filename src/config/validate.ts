/**
 * Turns a parsed YAML document into a {@link Config}: checks every key
 * against the config contract (config/gateway.schema.json), applies the documented
 * defaults, and cross-checks ids. Every problem is collected, none stops the
 * run; the result is null when any was found.
 */
import { isMap, isScalar, type Node } from 'yaml'
import type { ConfigProblem } from '../errors.js'
import type {
  AuthorizationServerConfig,
  ClientTimeouts,
  Config,
  GatewayConfig,
  IssuerConfig,
  ListenAddress,
  LogConfig,
  StoreConfig,
  TlsConfig,
} from './validated-config.js'
import { deepFreeze } from './freeze.js'
import { parseListenAddress } from './listen.js'
import { ALLOW_DEMO_ENV, demoOnNetworkRefusal } from './demo.js'
import type { MapView, Reader } from './reader.js'
import { readAdminApi, withAdminScopes } from './sections/admin-api.js'
import { readAuthorizationServer } from './sections/authorization-server.js'
import { readDpop } from './sections/dpop.js'
import { readGateway } from './sections/gateway.js'
import { readIssuers } from './sections/issuers.js'
import { readRoutes } from './sections/routes.js'
import { checkLimitOverrides } from './sections/route-rate-limits.js'
import { readAudit } from './sections/audit.js'
import { readApprovals } from './sections/approvals.js'
import { refuseRoutesOverOwnPaths } from './own-path-overlap.js'
import { warnUnreachableScopes } from './unreachable-scopes.js'
import { ownPaths } from './own-paths.js'
import { readTraces } from './sections/telemetry.js'
import { readSignals } from './sections/signals.js'
import { readHttp2 } from './sections/http2.js'
import { checkHttpUrl, parseAbsoluteUrl, stripTrailingSlash } from './values.js'
import { readWorkersSetting, resolveWorkers, workersStoreConflict } from './workers.js'
import { enumAt, keysAt } from './contract.js'

export const TOP_LEVEL_KEYS = keysAt('#')

export const CLIENT_TIMEOUT_KEYS = keysAt('#/properties/client_timeouts')

/** `client_timeouts` defaults: see docs/configuration.md, `client_timeouts`. */
export const DEFAULT_CLIENT_TIMEOUTS: ClientTimeouts = Object.freeze({
  headersMs: 20_000,
  bodyIdleMs: 15_000,
  requestMs: 300_000,
  keepAliveMs: 65_000,
})

const LOG_KEYS = keysAt('#/properties/log')
const REQUEST_ID_KEYS = keysAt('#/properties/request_id')
const TLS_KEYS = keysAt('#/properties/tls')

export const STORE_KEYS = keysAt('#/properties/store')
export const REPLICA_WAIT_KEYS = keysAt('#/properties/store/anyOf/3/properties/replica_wait')
/** `store.replica_wait.timeout` default (ms): see docs/redis-topologies.md. */
export const DEFAULT_REPLICA_WAIT_MS = 500
export const LOG_LEVELS = enumAt<LogConfig['level']>('#/properties/log/properties/level')

const DEFAULT_LISTEN: ListenAddress = { host: '0.0.0.0', port: 8080 }
const DEFAULT_ADMIN_LISTEN: ListenAddress = { host: '127.0.0.1', port: 9090 }

export interface ValidationResult {
  config: Config | null
  problems: ConfigProblem[]
  warnings: ConfigProblem[]
}

/**
 * Validate the document's root node. `file` becomes `Config.file` (absolute
 * path or `<inline>`); problems carry the reader's file name.
 */
export function validateRoot(r: Reader, root: Node | undefined, file: string): ValidationResult {
  const top = r.map(root, '', TOP_LEVEL_KEYS, { extensionKeys: true })
  if (top === undefined) return { config: null, problems: r.problems, warnings: r.warnings }

  const listen = top.opt('listen', listenAddress(r), DEFAULT_LISTEN)
  const adminListen = readAdminListen(r, top)
  const publicUrl = top.opt(
    'public_url',
    r.str({
      check: (v) => {
        const reason = checkHttpUrl(v)
        if (reason !== undefined) return reason
        return parseAbsoluteUrl(v)?.pathname.includes('//') ? 'the URL path must not contain `//`' : undefined
      },
    }),
    `http://localhost:${listen.port}`,
  )
  const normalizedPublicUrl = stripTrailingSlash(publicUrl)
  const tls = readTls(r, top)
  const store = readStore(r, top.get('store'), top.pathOf('store'))
  const workers = readWorkers(r, top, store)
  const log = r.map(top.get('log'), top.pathOf('log'), LOG_KEYS)
  const logLevel = log?.opt('level', r.oneOf(LOG_LEVELS, { what: 'a log level' }), 'info') ?? 'info'
  const accessSub = log?.opt('access_sub', r.bool(), true) ?? true
  const audit = readAudit(r, top.get('audit'), top.pathOf('audit'))
  const approvals = readApprovals(r, top.get('approvals'), top.pathOf('approvals'))
  const requestId = r.map(top.get('request_id'), top.pathOf('request_id'), REQUEST_ID_KEYS)
  const trustIncomingRequestId = requestId?.opt('trust_incoming', r.bool(), false) ?? false
  const shutdownTimeoutMs = top.opt('shutdown_timeout', r.millis(), 10_000)
  const clientTimeouts = readClientTimeouts(r, top)
  const http2 = readHttp2(r, top, tls !== null)
  const traces = top.has('telemetry') ? readTraces(r, top.get('telemetry'), top.pathOf('telemetry')) : null

  const asNode = top.get('authorization_server')
  const authorizationServer =
    asNode === undefined || top.isNull('authorization_server')
      ? null
      : (readAuthorizationServer(r, asNode, top.pathOf('authorization_server'), normalizedPublicUrl) ?? null)
  const asBroken = asNode !== undefined && !top.isNull('authorization_server') && authorizationServer === null

  const { issuers, ids: issuerIds } = top.has('issuers')
    ? readIssuers(r, top.get('issuers') as Node, top.pathOf('issuers'), authorizationServer === null ? null : normalizedPublicUrl)
    : { issuers: [] as IssuerConfig[], ids: new Set<string>() }
  const gateway = readGateway(r, top.get('gateway'), top.pathOf('gateway'))
  const dpop = readDpop(r, top.get('dpop'), top.pathOf('dpop'))
  const routesNode = top.get('routes')
  const routes =
    routesNode === undefined
      ? []
      : readRoutes(r, routesNode, top.pathOf('routes'), {
          // A refused authorization_server section still counts as present, so routes get no second, misleading problem.
          selfTokenFormat: authorizationServer?.accessToken.format ?? (asBroken ? 'jwt' : null),
          issuers: new Map(issuers.map((i) => [i.id, i])),
          issuerIds,
          publicUrl: normalizedPublicUrl,
          gateway,
        })

  if (authorizationServer !== null) checkLimitOverrides(r, top.get('authorization_server'), authorizationServer.clients, routes)
  const adminApi = readAdminApi(r, top, authorizationServer ?? null, routes)
  if (adminApi !== null && adminApi.publicPath === null && workers > 1) {
    // With workers, admin_listen is the primary's, which holds no authorization server to answer from.
    r.problem(top.get('admin_api'), top.pathOf('admin_api'), 'with `workers` above 1 the admin API is served only under `admin_api.public_path`: set it')
  }
  refuseDemoOnNetwork(r, top, listen, authorizationServer)
  const signals =
    top.has('signals') && !top.isNull('signals')
      ? readSignals(r, top.get('signals') as Node, top.pathOf('signals'), authorizationServer?.identityProviders ?? (asBroken ? [] : null))
      : null
  if (authorizationServer !== null) {
    const signalsServed = signals === null ? null : { push: signals.transmitters.some((t) => t.delivery === 'push'), transmitter: signals.transmitter !== null }
    refuseRoutesOverOwnPaths(r, routesNode, routes, normalizedPublicUrl, ownPaths(normalizedPublicUrl, authorizationServer, undefined, signalsServed))
    warnUnreachableScopes(r, routesNode, routes, authorizationServer)
  }
  for (const route of routes) {
    // The approval page is the authorization server's: without one, nobody could ever approve.
    if ((route.mcp?.approvalTools.length ?? 0) > 0 && authorizationServer === null && !asBroken)
      r.problem(
        routesNode,
        `routes.${route.name}.mcp.tools`,
        '`approval: required` needs the `authorization_server` (its approval page); add one or remove the approval',
      )
  }
  if (authorizationServer !== null) refuseMtlsWithoutCertificates(r, top, tls, gateway, authorizationServer)
  const mtlsPath = authorizationServer?.mtlsUrl == null ? null : new URL(authorizationServer.mtlsUrl).pathname.replace(/\/+$/, '')
  if (mtlsPath !== null && mtlsPath !== new URL(normalizedPublicUrl).pathname.replace(/\/+$/, '')) {
    // The endpoints are routed by path under public_url's: another host may differ, its path may not.
    r.problem(
      top.get('authorization_server'),
      'authorization_server.mtls_url',
      '`mtls_url` must have the path of `public_url` (only the host differs): the endpoints are served under that path',
    )
  }
  if (r.problems.length > 0) return { config: null, problems: r.problems, warnings: r.warnings }
  const config: Config = {
    file,
    listen,
    adminListen,
    publicUrl: normalizedPublicUrl,
    tls,
    store,
    log: { level: logLevel, accessSub },
    audit,
    approvals,
    trustIncomingRequestId,
    shutdownTimeoutMs,
    clientTimeouts,
    http2,
    authorizationServer: authorizationServer && adminApi ? withAdminScopes(authorizationServer, adminApi) : authorizationServer,
    issuers,
    gateway,
    routes,
    dpop,
    workers,
    traces,
    signals,
    adminApi,
  }
  return { config: deepFreeze(config), problems: r.problems, warnings: r.warnings }
}

/**
 * The demo secrets are published in the example config: on a loopback listen
 * they only warn (so `npm start` works on a fresh machine), on any other
 * address they would hand the network a known password, so the config is
 * refused unless BEARWARD_ALLOW_DEMO=1 says the operator means it.
 */
function refuseDemoOnNetwork(r: Reader, top: MapView, listen: ListenAddress, as: Config['authorizationServer'] | undefined): void {
  const refusal = demoOnNetworkRefusal(listen.host, as ?? null, r.envValue(ALLOW_DEMO_ENV))
  if (refusal !== null) r.problem(top.get('listen') ?? top.node, top.pathOf('listen'), refusal)
}

/** `host:port`, `[v6]:port`, or a bare port number (all interfaces). */
function listenAddress(r: Reader) {
  return (node: Node, path: string): ListenAddress | undefined => {
    const value = r.strOrInt()(node, path)
    return value === undefined ? undefined : toListenAddress(r, node, path, value)
  }
}

function toListenAddress(r: Reader, node: Node, path: string, value: string | number): ListenAddress | undefined {
  const parsed = typeof value === 'number' ? parseListenAddress(`0.0.0.0:${value}`) : parseListenAddress(value.trim())
  if (!parsed.ok) {
    r.problem(r.resolve(node) ?? node, path, parsed.reason)
    return undefined
  }
  return parsed.value
}

function readAdminListen(r: Reader, top: MapView): ListenAddress | null {
  if (!top.has('admin_listen')) return DEFAULT_ADMIN_LISTEN
  if (top.isNull('admin_listen')) return null
  const node = top.get('admin_listen') as Node
  const resolved = r.resolve(node)
  // `admin_listen: false` turns the admin listener off (also `${ADMIN:-false}`).
  if (isScalar(resolved) && resolved.value === false) return null
  const path = top.pathOf('admin_listen')
  const value = r.strOrInt()(node, path)
  if (value === undefined || value === 'false' || value === '') return null
  return toListenAddress(r, node, path, value) ?? null
}

/** `workers` (default 1), refused beside `store: memory` when it means more than one process. */
function readWorkers(r: Reader, top: MapView, store: StoreConfig): number {
  const node = top.get('workers')
  if (node === undefined || top.isNull('workers')) return 1
  const setting = readWorkersSetting(r, node, top.pathOf('workers'))
  if (setting === undefined) return 1
  const conflict = workersStoreConflict(setting, store)
  if (conflict !== undefined) r.problem(r.resolve(node) ?? node, top.pathOf('workers'), conflict)
  return resolveWorkers(setting)
}

function readClientTimeouts(r: Reader, top: MapView): ClientTimeouts {
  const m = r.map(top.get('client_timeouts'), top.pathOf('client_timeouts'), CLIENT_TIMEOUT_KEYS)
  if (m === undefined) return { ...DEFAULT_CLIENT_TIMEOUTS }
  const d = DEFAULT_CLIENT_TIMEOUTS
  const timeouts: ClientTimeouts = {
    headersMs: m.opt('headers', r.millis({ min: 1 }), d.headersMs),
    bodyIdleMs: m.opt('body_idle', r.millis({ min: 1 }), d.bodyIdleMs),
    requestMs: m.opt('request', r.millis({ min: 1 }), d.requestMs),
    keepAliveMs: m.opt('keep_alive', r.millis({ min: 1 }), d.keepAliveMs),
  }
  if (timeouts.requestMs < timeouts.bodyIdleMs) {
    r.problem(m.get('request') ?? m.node, m.pathOf('request'), '`request` bounds the whole body, so it must be at least `body_idle`')
  }
  return timeouts
}

/**
 * RFC 8705 needs a certificate to reach us: `tls.client_ca` on our listener,
 * or a trusted proxy's `gateway.client_certificate_header`. A client that
 * authenticates or binds its tokens by certificate, or an `mtls_url`, without
 * either would be refused at every request: said at load instead.
 */
function refuseMtlsWithoutCertificates(r: Reader, top: MapView, tls: TlsConfig | null, gateway: GatewayConfig, as: AuthorizationServerConfig): void {
  if ((tls !== null && tls.clientCertificates !== 'off') || gateway.clientCertificateHeader !== null) return
  const why =
    'no client certificate can reach bearward: set `tls.client_ca` (the listener asks for certificates) or `gateway.client_certificate_header` (a trusted proxy reports them)'
  if (as.mtlsUrl !== null) r.problem(top.get('authorization_server'), 'authorization_server.mtls_url', `\`mtls_url\` is set but ${why}`)
  for (const c of as.clients) {
    const method = c.tokenEndpointAuthMethod
    if (method === 'tls_client_auth' || method === 'self_signed_tls_client_auth' || c.tlsClientCertificateBoundAccessTokens) {
      r.problem(top.get('authorization_server'), `authorization_server.clients[${c.clientId}]`, `client \`${c.clientId}\` uses its TLS certificate, but ${why}`)
    }
  }
}

function readTls(r: Reader, top: MapView): TlsConfig | null {
  if (!top.has('tls') || top.isNull('tls')) return null
  const tls = r.map(top.get('tls'), top.pathOf('tls'), TLS_KEYS)
  if (tls === undefined) return null
  const certFile = tls.req('cert_file', r.filePath())
  const keyFile = tls.req('key_file', r.filePath())
  const clientCaFile = tls.maybe('client_ca', r.filePath()) ?? null
  const mode = tls.maybe('client_certificates', r.oneOf(['optional', 'required'] as const))
  if (mode !== undefined && clientCaFile === null) {
    r.problem(
      tls.get('client_certificates'),
      tls.pathOf('client_certificates'),
      '`client_certificates` needs `client_ca`: the CA certificates client certificates are verified against',
    )
  }
  const clientCertificates = clientCaFile === null ? 'off' : (mode ?? 'optional')
  return certFile === undefined || keyFile === undefined ? null : { certFile, keyFile, clientCaFile, clientCertificates }
}

function checkRedisUrl(value: string): string | undefined {
  const url = parseAbsoluteUrl(value)
  // Never echo the URL: it may hold a password.
  if (url === undefined || (url.protocol !== 'redis:' && url.protocol !== 'rediss:') || url.host === '') {
    return 'expected a redis:// or rediss:// URL (e.g. `redis://127.0.0.1:6379/0`)'
  }
  return undefined
}

/** `memory`, a redis URL, or `{ url, cluster | sentinels + name, key_prefix, command_timeout, replica_wait }`. */
function readStore(r: Reader, node: Node | undefined, path: string): StoreConfig {
  const memory: StoreConfig = { kind: 'memory' }
  if (node === undefined) return memory
  const resolved = r.resolve(node)
  if (isMap(resolved)) {
    const m = r.map(resolved, path, STORE_KEYS)
    if (m === undefined) return memory
    const sentinels = m.opt('sentinels', r.list(hostPort(r, 'sentinels')), [])
    const cluster = m.opt('cluster', r.list(hostPort(r, 'cluster nodes')), [])
    // With sentinels the URL is optional: it only carries credentials, database and TLS.
    const url = sentinels.length > 0 ? m.opt('url', r.str({ check: checkRedisUrl }), '') : m.req('url', r.str({ check: checkRedisUrl }))
    if (sentinels.length > 0 && cluster.length > 0) r.problem(m.get('sentinels'), m.pathOf('sentinels'), 'use either `sentinels` or `cluster`, not both')
    if (m.has('name') && sentinels.length === 0) r.problem(m.get('name'), m.pathOf('name'), '`name` is the master name at the sentinels: it needs `sentinels`')
    const commandTimeoutMs = m.opt('command_timeout', r.millis({ min: 1 }), 1000)
    return {
      kind: 'redis',
      url: url ?? '',
      cluster,
      keyPrefix: m.opt('key_prefix', r.str({ allowEmpty: true }), 'bw:'),
      commandTimeoutMs,
      sentinels,
      sentinelName: m.opt('name', r.str(), 'mymaster'),
      replicaWait: readReplicaWait(r, m, cluster.length > 0 || sentinels.length > 0 ? 1 : 0, commandTimeoutMs),
    }
  }
  const value = r.str({
    expected: '`memory`, a redis:// URL, or a mapping with `url`',
    check: (v) => (v === 'memory' ? undefined : checkRedisUrl(v)?.replace('expected a', 'expected `memory` or a')),
  })(node, path)
  if (value === undefined || value === 'memory') return memory
  return {
    kind: 'redis',
    url: value,
    cluster: [],
    keyPrefix: 'bw:',
    commandTimeoutMs: 1000,
    sentinels: [],
    sentinelName: 'mymaster',
    replicaWait: { replicas: 0, timeoutMs: DEFAULT_REPLICA_WAIT_MS },
  }
}

/**
 * `store.replica_wait: { replicas, timeout }`: how many replicas a
 * revocation write waits for, and for how long. The wait is one Redis
 * command, so it must end before the command timeout does.
 */
function readReplicaWait(r: Reader, store: MapView, defaultReplicas: number, commandTimeoutMs: number): { replicas: number; timeoutMs: number } {
  const fallback = { replicas: defaultReplicas, timeoutMs: Math.min(DEFAULT_REPLICA_WAIT_MS, Math.max(1, commandTimeoutMs - 100)) }
  if (!store.has('replica_wait')) return fallback
  const m = r.map(store.get('replica_wait'), store.pathOf('replica_wait'), REPLICA_WAIT_KEYS)
  if (m === undefined) return fallback
  const replicas = m.opt('replicas', r.int({ min: 0, max: 16 }), defaultReplicas)
  const timeoutMs = m.opt('timeout', r.millis({ min: 1 }), fallback.timeoutMs)
  if (m.has('timeout') && timeoutMs >= commandTimeoutMs) {
    r.problem(m.get('timeout'), m.pathOf('timeout'), `must be shorter than store.command_timeout (${commandTimeoutMs} ms): the wait is one Redis command`)
  }
  return { replicas, timeoutMs }
}

/** A `host:port` address of a Redis Cluster node or a sentinel. */
function hostPort(r: Reader, what: string) {
  return r.str({
    check: (v) => {
      const parsed = parseListenAddress(v)
      return parsed.ok ? undefined : `${what} are \`host:port\`: ${parsed.reason}`
    },
  })
}
