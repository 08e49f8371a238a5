// Baseline: the barest correct pass-through proxy. node:http in front, an
// undici Pool (keep-alive) to the upstream via `pool.dispatch()` with a
// minimal handler (undici's lowest-overhead API: no Readable per response),
// hop-by-hop headers dropped, bodies streamed both ways with backpressure.
// No routing, no auth, no logging: the ceiling an undici-based gateway can
// reach on this machine.
//
// With `--gateway-headers` it also sends what every bearward route sends
// whatever its config (issue #39's floor): X-Forwarded-For, -Proto and -Host
// and a `traceparent` (a random trace id and span id) upstream, and an
// X-Request-Id (a prefix and a counter) on the answer. bearward's public
// route at `warn` against this twin is what bearward's own code costs.
// With `--identity-headers` it sends, besides those, the four identity headers
// a token route sends by default (X-Auth-Subject, -Client-Id, -Scope, -Issuer,
// docs/configuration.md `identity_headers`), fixed values of a bench token's
// lengths: a token route against this twin is what its token work costs.
// With `--read-json` a request with a body is read whole, decoded as strict
// UTF-8 and parsed with JSON.parse before it is forwarded (as the bytes
// read): the least any gateway that judges a JSON-RPC body does, and so, with
// the identity headers, the floor of the MCP row (bearward's MCP inspection
// reads the same way, src/gateway/mcp/json.ts, and also judges what it read).
// `node bare-undici-proxy.mjs UPSTREAM_URL [--gateway-headers] [--identity-headers] [--read-json]` → prints {"msg":"ready","url":...}
import { randomBytes, randomFillSync } from 'node:crypto'
import { createServer } from 'node:http'
import { Pool } from 'undici'

const upstream = new URL(process.argv[2])
const identityHeaders = process.argv.includes('--identity-headers')
const gatewayHeaders = identityHeaders || process.argv.includes('--gateway-headers')
const readJson = process.argv.includes('--read-json')
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const ISSUER = `http://127.0.0.1:${upstream.port}`
const pool = new Pool(upstream.origin, { connections: 128, pipelining: 1, keepAliveTimeout: 60_000 })

// RFC 9110 7.6.1 hop-by-hop fields, plus host (undici sets the upstream's).
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authorization',
  'proxy-authenticate',
  'host',
])

function endToEnd(headers) {
  const out = {}
  for (const name in headers) if (!HOP.has(name)) out[name] = headers[name]
  return out
}

// Random ids from a pooled buffer, one CSPRNG call per 256 ids, as bearward makes them.
const idPool = Buffer.allocUnsafe(24 * 256)
let idOffset = idPool.length
function randomHex(n) {
  if (idOffset + n > idPool.length) {
    randomFillSync(idPool)
    idOffset = 0
  }
  const hex = idPool.toString('hex', idOffset, idOffset + n)
  idOffset += n
  return hex
}
const idPrefix = randomBytes(6).toString('hex')
let idCounter = 0

class Relay {
  constructor(res, requestId) {
    this.res = res
    this.requestId = requestId
  }
  onRequestStart() {}
  onResponseStart(controller, statusCode, headers) {
    if (statusCode < 200) return
    // The client went away: free the upstream connection (a paused exchange would hold it forever).
    if (this.res.destroyed) return controller.abort(new Error('client gone'))
    const answer = endToEnd(headers)
    if (this.requestId !== null) answer['x-request-id'] = this.requestId
    this.res.writeHead(statusCode, answer)
    this.res.on('drain', () => controller.resume())
  }
  onResponseData(controller, chunk) {
    if (this.res.destroyed) return controller.abort(new Error('client gone'))
    if (!this.res.write(chunk)) controller.pause()
  }
  onResponseEnd() {
    this.res.end()
  }
  onResponseError(_controller, _err) {
    if (!this.res.headersSent) this.res.writeHead(502, { 'content-type': 'text/plain' })
    this.res.end()
  }
}

const server = createServer((req, res) => {
  const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined
  const headers = endToEnd(req.headers)
  let requestId = null
  if (gatewayHeaders) {
    headers['x-forwarded-for'] = req.socket.remoteAddress
    headers['x-forwarded-proto'] = 'http'
    headers['x-forwarded-host'] = req.headers.host
    headers.traceparent = `00-${randomHex(16)}-${randomHex(8)}-00`
    requestId = `${idPrefix}-${(++idCounter).toString(36)}`
    if (identityHeaders) {
      headers['x-auth-subject'] = 'user-42'
      headers['x-auth-client-id'] = 'bench-client'
      headers['x-auth-scope'] = 'orders:read'
      headers['x-auth-issuer'] = ISSUER
    }
  }
  if (readJson && hasBody && req.headers['content-length'] !== '0') return forwardParsed(req, res, headers, requestId)
  pool.dispatch({ path: req.url, method: req.method, headers, body: hasBody ? req : null }, new Relay(res, requestId))
})

/** `--read-json`: the body read whole and parsed, then forwarded as read (400 when it is not JSON). */
function forwardParsed(req, res, headers, requestId) {
  const chunks = []
  let size = 0
  // A client that goes away mid-body: nothing to forward (an unheard 'error' would end the process).
  req.on('error', () => res.destroy())
  req.on('data', (chunk) => {
    chunks.push(chunk)
    size += chunk.length
  })
  req.on('end', () => {
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)
    try {
      JSON.parse(UTF8.decode(body))
    } catch {
      res.writeHead(400, { 'content-type': 'text/plain' }).end('not json')
      return
    }
    pool.dispatch({ path: req.url, method: req.method, headers, body }, new Relay(res, requestId))
  })
}
server.keepAliveTimeout = 65_000

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ msg: 'ready', url: `http://127.0.0.1:${server.address().port}` }) + '\n')
})
process.on('SIGTERM', () => process.exit(0))
