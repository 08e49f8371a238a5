/**
 * A client that goes away in the middle of its request body is not a
 * server fault (issue #28.9): no level-50 "unhandled error" line with a
 * stack, one quiet line, and `bearward_requests_aborted_total{face}` counts
 * it (info at the authorization server, debug at the gateway). Real clients on raw sockets send half of a declared body and destroy
 * the connection, at the token endpoint and on a gateway route.
 */
import { createServer, type IncomingMessage } from 'node:http'
import { connect } from 'node:net'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { asConfigYaml } from '../helpers/as-config.js'
import { closeServer, eventually, listen } from '../helpers/http.js'
import { serveRuntime, type ServedRuntime } from '../helpers/serve-runtime.js'

/** An upstream that records each request as it arrives (before its body ends). */
async function startRecordingUpstream(): Promise<{ url: string; arrived: IncomingMessage[]; close(): Promise<void> }> {
  const arrived: IncomingMessage[] = []
  const server = createServer((req, res) => {
    arrived.push(req)
    req.resume()
    req.on('end', () => res.end('ok'))
    req.on('error', () => undefined)
  })
  const { url } = await listen(server)
  return {
    url,
    arrived,
    close: () => closeServer(server),
  }
}

/**
 * Send the head of a POST declaring 1000 bytes and 100 of them; destroy the
 * socket once `started()` says the server is reading the body. Resolves when
 * the server's side of the request has closed.
 */
async function abortMidBody(served: ServedRuntime, path: string, started: (req: IncomingMessage) => boolean): Promise<void> {
  let serverReq: IncomingMessage | null = null
  const onRequest = (req: IncomingMessage): void => {
    if (req.url === path) serverReq = req
  }
  served.server.on('request', onRequest)
  const { port } = served.server.address() as AddressInfo
  const socket = connect(port, '127.0.0.1')
  socket.on('error', () => undefined)
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\n${'a=b&'.repeat(25)}`,
  )
  const reading = await eventually(() => serverReq !== null && started(serverReq), 5_000, 5)
  served.server.off('request', onRequest)
  if (!reading || serverReq === null) throw new Error(`the server never started reading the body of ${path}`)
  const req: IncomingMessage = serverReq
  const closed = new Promise<void>((resolve) => (req.destroyed ? resolve() : req.once('close', () => resolve())))
  socket.destroy()
  await closed
}

const sample = (served: ServedRuntime, series: string): number | undefined => {
  const line = served.metrics
    .render()
    .split('\n')
    .find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

t.test('a request body the client abandons: no level-50 line, a quiet one, counted per face', async (t) => {
  const up = await startRecordingUpstream()
  const yaml = await asConfigYaml({
    port: 0,
    upstream: up.url,
    routes: [{ name: 'upload', match: { path: '/upload' }, upstream: up.url, public: true }],
    override: { public_url: '${PUBLIC_URL}' },
  })
  // At debug: the gateway logs its line there (its volume can be a client's line rate).
  const served = await serveRuntime(yaml, { logLevel: 'debug' })
  t.teardown(async () => {
    await served.close()
    await up.close()
  })

  await t.test('at the token endpoint', async (t) => {
    const before = served.logs.length
    await abortMidBody(served, '/token', (req) => req.listenerCount('data') > 0)
    t.ok(
      await eventually(() => served.logs.slice(before).some((l) => l.msg === 'request body aborted by the client'), 5_000),
      'one line says the client went away',
    )
    const lines = served.logs.slice(before)
    t.same(
      lines.filter((l) => Number(l.level) >= 50),
      [],
      'no error line',
    )
    const aborted = lines.find((l) => l.msg === 'request body aborted by the client')
    t.equal(aborted?.level, 30, 'logged at info')
    t.notOk(aborted !== undefined && 'err' in aborted, 'no error object, no stack')
    t.equal(aborted?.face, 'as')
    t.equal(aborted?.route, 'as:token')
    t.equal(sample(served, 'bearward_requests_aborted_total{face="as"}'), 1, 'counted once at the authorization server')
  })

  await t.test('on a gateway route', async (t) => {
    const before = served.logs.length
    const arrivedBefore = up.arrived.length
    await abortMidBody(served, '/upload', () => up.arrived.length > arrivedBefore)
    t.ok(
      await eventually(() => served.logs.slice(before).some((l) => l.msg === 'request body aborted by the client'), 5_000),
      'one line says the client went away',
    )
    const lines = served.logs.slice(before)
    t.same(
      lines.filter((l) => Number(l.level) >= 50),
      [],
      'no error line',
    )
    const aborted = lines.find((l) => l.msg === 'request body aborted by the client')
    t.equal(aborted?.level, 20, 'logged at debug')
    t.notOk(aborted !== undefined && 'err' in aborted, 'no error object, no stack')
    t.equal(aborted?.face, 'gateway')
    t.equal(aborted?.route, 'upload')
    t.equal(sample(served, 'bearward_requests_aborted_total{face="gateway"}'), 1, 'counted once at the gateway')
    t.equal(sample(served, 'bearward_requests_aborted_total{face="as"}'), 1, 'the other face is unchanged')
  })
})
