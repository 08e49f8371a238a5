// An HTTP/2 upstream spoken to in cleartext with prior knowledge (h2c), for
// the h2-route scenario: node:http2, the same fixed small JSON answer as
// upstream.mjs. Run as its own process: `node bench/lib/h2c-upstream.mjs [port]`.
// Prints one JSON line {"msg":"ready","url":...} when listening (an http://
// URL: the route writes it as h2c://).
import { createServer } from 'node:http2'

const BODY = Buffer.from(JSON.stringify({ ok: true, service: 'bench-upstream', items: [1, 2, 3] }))

// As many streams per connection as bearward's undici client opens (its default, 100).
const server = createServer({ settings: { maxConcurrentStreams: 1000 } }, (req, res) => {
  req.resume()
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(BODY.length) })
    res.end(BODY)
  })
})

server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const { port } = server.address()
  process.stdout.write(JSON.stringify({ msg: 'ready', url: `http://127.0.0.1:${port}` }) + '\n')
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
