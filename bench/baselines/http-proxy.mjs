// Reference: http-proxy (node-http-proxy) with a keep-alive agent, the
// classic Node reverse proxy. `node http-proxy.mjs UPSTREAM_URL`
import { Agent, createServer } from 'node:http'
import httpProxy from 'http-proxy'

const agent = new Agent({ keepAlive: true, maxSockets: 128 })
const proxy = httpProxy.createProxyServer({ target: process.argv[2], agent })
proxy.on('error', (_err, _req, res) => {
  if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' })
  res.end()
})

const server = createServer((req, res) => proxy.web(req, res))
server.keepAliveTimeout = 65_000
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ msg: 'ready', url: `http://127.0.0.1:${server.address().port}` }) + '\n')
})
process.on('SIGTERM', () => process.exit(0))
