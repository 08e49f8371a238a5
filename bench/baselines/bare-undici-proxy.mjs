// Baseline: the barest correct pass-through proxy. node:http in front, an
// undici Pool (keep-alive) to the upstream via `pool.dispatch()` with a
// minimal handler (undici's lowest-overhead API: no Readable per response),
// hop-by-hop headers dropped, bodies streamed both ways with backpressure.
// No routing, no auth, no logging: the ceiling an undici-based gateway can
// reach on this machine.
// `node bare-undici-proxy.mjs UPSTREAM_URL` → prints {"msg":"ready","url":...}
import { createServer } from 'node:http'
import { Pool } from 'undici'

const upstream = new URL(process.argv[2])
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

class Relay {
  constructor(res) {
    this.res = res
  }
  onRequestStart() {}
  onResponseStart(controller, statusCode, headers) {
    if (statusCode < 200) return
    // The client went away: free the upstream connection (a paused exchange would hold it forever).
    if (this.res.destroyed) return controller.abort(new Error('client gone'))
    this.res.writeHead(statusCode, endToEnd(headers))
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
  pool.dispatch({ path: req.url, method: req.method, headers: endToEnd(req.headers), body: hasBody ? req : null }, new Relay(res))
})
server.keepAliveTimeout = 65_000

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ msg: 'ready', url: `http://127.0.0.1:${server.address().port}` }) + '\n')
})
process.on('SIGTERM', () => process.exit(0))
