// The shared upstream every target forwards to: node:http, keep-alive, one
// fixed small JSON answer for any method and path (a request body is read and
// dropped). Run as its own process: `node bench/lib/upstream.mjs [port]`.
// Prints one JSON line {"msg":"ready","url":...} when listening.
import { createServer } from 'node:http'

const BODY = Buffer.from(JSON.stringify({ ok: true, service: 'bench-upstream', items: [1, 2, 3] }))
const HEADERS = { 'content-type': 'application/json', 'content-length': String(BODY.length) }

const server = createServer((req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(200, HEADERS)
    res.end(BODY)
  })
})
// Proxies keep pooled connections open between rounds; do not cut them.
server.keepAliveTimeout = 65_000
server.headersTimeout = 66_000

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const { port } = server.address()
  process.stdout.write(JSON.stringify({ msg: 'ready', url: `http://127.0.0.1:${port}` }) + '\n')
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
