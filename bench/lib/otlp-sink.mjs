// A local OTLP/HTTP trace receiver for the tracing rows: accepts POST
// /v1/traces (JSON or protobuf), reads the body, answers 200 `{}`; counts
// exports and bytes (GET /stats). Its own process:
// `node otlp-sink.mjs` → prints {"msg":"ready","url":...}.
import { createServer } from 'node:http'

let exports = 0
let bytes = 0
const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/stats') {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ exports, bytes }))
    return
  }
  req.on('data', (d) => {
    bytes += d.length
  })
  req.on('end', () => {
    exports += 1
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{}')
  })
})
server.keepAliveTimeout = 65_000
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address()
  process.stdout.write(JSON.stringify({ msg: 'ready', url: `http://127.0.0.1:${port}` }) + '\n')
})
process.on('SIGTERM', () => server.close(() => process.exit(0)))
