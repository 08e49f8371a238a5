// bearward as deployed, for the open-loop and CPU-per-request scenarios: a
// Redis store, the access log on (`log.level: info`, the default), and one route of
// each kind behind one process, with the values each route's requests carry:
//
//   /public/items   public: true
//   /api/items      token: jwt, orders:read for GET   (bearer JWTs; DPoP-bound JWTs with a proof each)
//   /opq/items      token: introspect                 (opaque tokens the AS issued, kept in Redis)
//   /mcp            token: jwt, every request needs orders:read, per-tool rules (mcp.tools)
//
// The MCP request is a small JSON-RPC tools/call for a tool the token may use.
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto'
import { reserveAddress, startBearward } from './bearward.mjs'
import { SCOPE, basic, gatewayConfig, route, writeJson } from './gateway-config.mjs'
import { startRedis } from './redis.mjs'
import { pool, postToken } from './token-endpoint.mjs'
import { checkWithJose, generateSigningJwk, mintJwts, writeLines } from './tokens.mjs'

export const PATHS = { public: '/public/items', jwt: '/api/items', opaque: '/opq/items', mcp: '/mcp', post: '/post' }

/** A tools/call the token's scope allows (get_order needs only the route's orders:read). */
export const MCP_BODY = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'get_order', arguments: { id: '42' } } })
export const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2025-06-18',
}
/** Per-tool rules, as docs/mcp.md configures them: these tools need more than the route's scope. */
const MCP_RULES = { tools: { delete_order: ['orders:write'], 'admin_*': ['admin'] } }

const TOKENS = 1000
const DPOP_CLIENTS = 50

const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url')

function thumbprint(jwk) {
  return createHash('sha256')
    .update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }))
    .digest('base64url')
}

/** The routes of the deployed config, to `upstream`. */
export function deployedRoutes(upstream) {
  return [
    route('public', '/public', upstream, { public: true }),
    route('api', '/api', upstream, { token: 'jwt', scopes: { GET: [SCOPE] } }),
    route('opq', '/opq', upstream, { token: 'introspect', scopes: { GET: [SCOPE] } }),
    route('mcp', '/mcp', upstream, { token: 'jwt', scopes: { '*': [SCOPE] }, mcp: MCP_RULES }),
  ]
}

/**
 * The deployed routes and the MCP route's twin without its `mcp` section
 * (`/post`): the same token and scope rule, the same POST forwarded unread.
 * The MCP route over it is what the MCP inspection itself costs.
 */
export function withMcpTwin(upstream) {
  return [...deployedRoutes(upstream), route('post', '/post', upstream, { token: 'jwt', scopes: { '*': [SCOPE] } })]
}

/** Only the JWT route of the deployed config: what a route costs when no other feature is configured anywhere. */
export function jwtRouteAlone(upstream) {
  return deployedRoutes(upstream).filter((r) => r.name === 'api')
}

/**
 * The deployed routes and one route of every other per-route feature: DPoP
 * required, step-up, an upstream token minted per client token, and gRPC to an
 * h2c upstream (issue #39: features elsewhere must cost the JWT route nothing).
 */
export function everyFeature(upstream) {
  const h2c = upstream.replace(/^http:/, 'h2c:')
  return [
    ...deployedRoutes(upstream),
    route('dpop-only', '/dpop', upstream, { token: 'jwt', scopes: { GET: [SCOPE] }, dpop: 'required' }),
    route('stepped', '/stepped', upstream, { token: 'jwt', scopes: { GET: [SCOPE] }, authentication: { acr: ['mfa'], max_age: '5m' } }),
    route('minted', '/minted', upstream, { token: 'jwt', scopes: { GET: [SCOPE] }, upstream_token: 'exchange' }),
    route('grpc', '/grpc.Orders', h2c, { token: 'jwt', scopes: { '*': [SCOPE] } }),
  ]
}

/**
 * Start Redis and one deployed bearward (`name`, with `extra` top-level
 * config keys such as `telemetry`), and prepare the values its requests carry:
 * `jwtFile` (1,000 bearer JWTs), `opaqueFile` (1,000 opaque tokens from
 * POST /token), and `dpopProofs(count)`, which signs `count` fresh
 * `<token> <proof>` lines just before a measurement. The JWTs are minted for
 * the first instance's public_url; pass `shared` (a previous call's result)
 * to start another instance that accepts the same values. `memoryStore`:
 * no Redis, the embedded memory store (the instructions scenario's: under
 * callgrind the Redis heartbeat misses its deadline and the store is taken
 * for unreachable).
 */
export async function startDeployed(
  ctx,
  {
    name = 'bearward-deployed',
    logLevel = 'info',
    extra = {},
    env,
    shared = null,
    routes = deployedRoutes,
    callgrind = false,
    memoryStore = false,
    nodeFlags = [],
  } = {},
) {
  const up = await ctx.upstream()
  const redis = memoryStore ? null : (shared?.redis ?? ctx.track(await startRedis(ctx.workDir, `redis-${name}`)))
  const address = await reserveAddress()
  const publicUrl = shared?.publicUrl ?? address.publicUrl
  const jwk = shared?.jwk ?? (await generateSigningJwk())
  const keyFile = shared?.keyFile ?? writeJson(ctx.file(`${name}.jwk`), jwk)
  const config = {
    ...(await gatewayConfig({ publicUrl, keyFile, store: redis?.url ?? 'memory', accessFormat: 'opaque', routes: routes(up.url) })),
    ...extra,
  }
  const bw = ctx.track(await startBearward(ctx, { name, port: address.port, config, logLevel, env, callgrind, nodeFlags }))
  if (shared) return { ...shared, bw }

  const jwts = mintJwts({ privateJwk: jwk, issuer: publicUrl, audience: publicUrl, scope: SCOPE, count: TOKENS })
  await checkWithJose(jwts[0], jwk, publicUrl, publicUrl)
  const jwtFile = writeLines(ctx.file(`${name}.jwt.tokens`), jwts)
  const body = `grant_type=client_credentials&scope=${encodeURIComponent(SCOPE)}`
  const opaque = await pool(TOKENS, 16, async () => (await postToken(`${bw.url}/token`, body, basic())).access_token)
  if (opaque.some((t) => t.split('.').length === 3)) throw new Error('/token issued a JWT although access_token.format is opaque')
  const opaqueFile = writeLines(ctx.file(`${name}.opaque.tokens`), opaque)

  const keys = Array.from({ length: DPOP_CLIENTS }, () => {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    const pub = pair.publicKey.export({ format: 'jwk' })
    return { privateKey: pair.privateKey, jkt: thumbprint(pub), header: b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: pub }) }
  })
  const bound = mintJwts({
    privateJwk: jwk,
    issuer: publicUrl,
    audience: publicUrl,
    scope: SCOPE,
    count: DPOP_CLIENTS,
    extra: (i) => ({ cnf: { jkt: keys[i].jkt } }),
  })
  const clients = keys.map((k, i) => ({ ...k, token: bound[i], ath: createHash('sha256').update(bound[i]).digest('base64url') }))
  const htu = publicUrl + PATHS.jwt
  let batch = 0
  /** `count` lines `<token> <proof>`, every proof fresh (own jti, iat now), in a new file. */
  const dpopProofs = (count) => {
    batch += 1
    const iat = Math.floor(Date.now() / 1000)
    const prefix = randomBytes(6).toString('base64url')
    const out = new Array(count)
    for (let i = 0; i < count; i++) {
      const c = clients[i % clients.length]
      const input = `${c.header}.${b64({ jti: `${prefix}-${i}`, htm: 'GET', htu, iat, ath: c.ath })}`
      const sig = sign('sha256', Buffer.from(input), { key: c.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')
      out[i] = `${c.token} ${input}.${sig}`
    }
    return writeLines(ctx.file(`${name}.dpop-${batch}.values`), out)
  }
  return { bw, redis, publicUrl, jwk, keyFile, jwtFile, opaqueFile, dpopProofs }
}

/**
 * What a request to each route carries, for a load generator spec: url,
 * method, headers, body, and the values to walk (`values`, open-loop-child's
 * form) when the route reads a token.
 */
export function requestFor(d, kind, base = d.bw.url) {
  switch (kind) {
    case 'public':
      return { url: base + PATHS.public, method: 'GET', headers: {} }
    case 'jwt':
      return { url: base + PATHS.jwt, method: 'GET', headers: {}, values: { file: d.jwtFile, as: 'bearer' } }
    case 'opaque':
      return { url: base + PATHS.opaque, method: 'GET', headers: {}, values: { file: d.opaqueFile, as: 'bearer' } }
    case 'mcp':
      return { url: base + PATHS.mcp, method: 'POST', headers: MCP_HEADERS, body: MCP_BODY, values: { file: d.jwtFile, as: 'bearer' } }
    case 'post':
      return { ...requestFor(d, 'mcp', base), url: base + PATHS.post }
    default:
      throw new Error(`no request for ${kind}`)
  }
}
