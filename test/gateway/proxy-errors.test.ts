import t from 'tap'
import { createServer as createNetServer, type Socket } from 'node:net'
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http'
import { once } from 'node:events'
import type { RequestContext } from '../../src/context.js'
import { alice, listen, proxyFor, routeConfig, send, silentLog, startProxy, startUpstream } from './proxy-helpers.js'
import { contextExtras } from '../helpers/trace.js'
import { listen as listenOnPortZero } from '../helpers/http.js'

/** A TCP server that accepts connections and never says anything. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>()
  const server = createNetServer((s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  const { port } = await listenOnPortZero(server)
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

/** A port nothing listens on: bind, note the port, close. */
async function closedPort(): Promise<number> {
  const s = await silentServer()
  await s.close()
  return s.port
}

t.test('a refused connection is a 502 bad_gateway', async (t) => {
  const port = await closedPort()
  const gw = await startProxy([routeConfig({ upstream: `http://127.0.0.1:${port}` })])
  t.teardown(() => gw.close())
  const reply = await send(gw.url, { path: '/x' })
  t.equal(reply.status, 502)
  t.same(JSON.parse(reply.text), { error: 'bad_gateway', error_description: 'The upstream could not be reached' })
  t.equal(reply.headers['cache-control'], 'no-store')
})

t.test('an upstream that resets before answering is a 502', async (t) => {
  const up = await startUpstream((req) => req.socket.destroy())
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const reply = await send(gw.url, { method: 'POST', body: 'data' })
  t.equal(reply.status, 502)
  t.equal(JSON.parse(reply.text).error, 'bad_gateway')
})

t.test('response headers later than timeouts.headers are a 504 gateway_timeout', async (t) => {
  const held: ServerResponse[] = []
  const up = await startUpstream((_req, res) => held.push(res))
  const gw = await startProxy([routeConfig({ upstream: up.url, timeouts: { connectMs: 1000, headersMs: 200, idleMs: 5000 } })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const started = Date.now()
  const reply = await send(gw.url)
  const elapsed = Date.now() - started
  t.equal(reply.status, 504)
  t.same(JSON.parse(reply.text), { error: 'gateway_timeout', error_description: 'The upstream did not answer in time' })
  // undici's header/body timers tick twice a second, so they fire up to ~1 s late.
  t.ok(elapsed >= 150 && elapsed < 2000, `the gateway waited for the configured time (${elapsed} ms)`)
  t.equal(held.length, 1, 'the upstream did receive the request')
})

t.test('a connection that cannot be established in timeouts.connect is a 504', async (t) => {
  // TCP accepts, TLS never answers: the handshake is part of connecting.
  const silent = await silentServer()
  const gw = await startProxy([routeConfig({ upstream: `https://127.0.0.1:${silent.port}`, timeouts: { connectMs: 200, headersMs: 5000, idleMs: 5000 } })])
  t.teardown(async () => {
    await gw.close()
    await silent.close()
  })
  const reply = await send(gw.url)
  t.equal(reply.status, 504)
  t.equal(JSON.parse(reply.text).error, 'gateway_timeout')
})

/** Issue a GET and report how the response ended. */
function fetchOutcome(url: string): Promise<{ status: number; received: number; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { agent: false }, (res) => {
      let received = 0
      res.on('data', (c: Buffer) => (received += c.length))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, received, complete: res.complete }))
      res.on('error', () => resolve({ status: res.statusCode ?? 0, received, complete: res.complete }))
      res.on('aborted', () => resolve({ status: res.statusCode ?? 0, received, complete: false }))
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('an upstream reset mid-body destroys the client connection', async (t) => {
  const up = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-length': '1000' })
    res.write(Buffer.alloc(100, 'a'), () => setImmediate(() => res.socket?.destroy()))
  })
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const outcome = await fetchOutcome(`${gw.url}/big`)
  t.equal(outcome.status, 200, 'headers had already gone out')
  t.notOk(outcome.complete, 'the client sees a truncated response, not a whole one')
  t.ok(outcome.received < 1000)
})

t.test('a body that stalls longer than timeouts.idle destroys the client connection', async (t) => {
  const held: ServerResponse[] = []
  const up = await startUpstream((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('first chunk')
    held.push(res)
  })
  const gw = await startProxy([routeConfig({ upstream: up.url, timeouts: { connectMs: 1000, headersMs: 1000, idleMs: 200 } })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const outcome = await fetchOutcome(gw.url)
  t.equal(outcome.status, 200)
  t.notOk(outcome.complete)
  t.equal(outcome.received, 'first chunk'.length)
})

t.test('a client that goes away aborts the upstream request', async (t) => {
  t.test('while the body streams', async (t) => {
    let upstreamClosed: (finished: boolean) => void = () => {}
    const closed = new Promise<boolean>((resolve) => (upstreamClosed = resolve))
    const up = await startUpstream((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write('hello')
      res.on('close', () => upstreamClosed(res.writableFinished))
    })
    const gw = await startProxy([routeConfig({ upstream: up.url })])
    t.teardown(async () => {
      await gw.close()
      await up.close()
    })
    const req = httpRequest(gw.url, { agent: false })
    req.on('error', () => {})
    req.end()
    const [res] = (await once(req, 'response')) as [IncomingMessage]
    await once(res, 'data')
    req.destroy()
    t.equal(await closed, false, 'the upstream saw its request closed before it finished')
    await Promise.all(gw.forwards)
  })

  t.test('before the upstream answered', async (t) => {
    let arrived: () => void = () => {}
    const requestArrived = new Promise<void>((resolve) => (arrived = resolve))
    let upstreamClosed: () => void = () => {}
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve))
    const up = await startUpstream((req, res) => {
      res.on('close', () => upstreamClosed())
      req.resume()
      arrived()
    })
    const gw = await startProxy([routeConfig({ upstream: up.url })])
    t.teardown(async () => {
      await gw.close()
      await up.close()
    })
    const req = httpRequest(gw.url, { agent: false })
    req.on('error', () => {})
    req.end()
    await requestArrived
    req.destroy()
    await closed
    t.pass('the upstream saw its request closed')
    await Promise.all(gw.forwards)
  })
  t.end()
})

t.test('max_body is enforced', async (t) => {
  let hits = 0
  // Set by the chunked case to watch its own request.
  let onData: (() => void) | null = null
  let onAbort: (() => void) | null = null
  const up = await startUpstream((req, res) => {
    hits++
    req.on('data', () => onData?.())
    req.on('end', () => res.end('whole body received'))
    res.on('close', () => {
      if (!res.writableFinished) onAbort?.()
    })
  })
  const gw = await startProxy([routeConfig({ upstream: up.url, maxBodyBytes: 1000 })], undefined, (req) =>
    req.url === '/read' ? { body: Buffer.alloc(1001) } : {},
  )
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })

  t.test('a declared Content-Length over the limit is refused before contacting the upstream', async (t) => {
    const reply = await send(gw.url, { method: 'POST', body: Buffer.alloc(1001) })
    t.equal(reply.status, 413)
    t.same(JSON.parse(reply.text), { error: 'payload_too_large', error_description: 'Request body too large' })
    t.equal(hits, 0)
  })

  t.test('a body exactly at the limit passes', async (t) => {
    const reply = await send(gw.url, { method: 'POST', body: Buffer.alloc(1000) })
    t.equal(reply.status, 200)
    t.equal(reply.text, 'whole body received')
    t.equal(hits, 1)
  })

  t.test('a chunked body that grows past the limit is cut off with 413', async (t) => {
    const dataArrived = new Promise<void>((resolve) => (onData = resolve))
    const aborted = new Promise<void>((resolve) => (onAbort = resolve))
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(gw.url, { method: 'POST', agent: false, headers: { 'transfer-encoding': 'chunked' } }, (res) => {
        res.resume()
        resolve(res.statusCode ?? 0)
        req.destroy()
      })
      req.on('error', (err) => {
        if (!req.destroyed) reject(err)
      })
      // Under the limit until the upstream is receiving, then past it; the
      // request stays open: the answer must not wait for its end.
      req.write(Buffer.alloc(600))
      void dataArrived.then(() => req.write(Buffer.alloc(600)))
    })
    t.equal(status, 413)
    await aborted
    t.pass('the upstream saw the oversized request aborted')
  })

  t.test('a body the gateway read (fwd.body) over the limit is refused', async (t) => {
    const before = hits
    const reply = await send(gw.url, { method: 'POST', path: '/read', body: 'x' })
    t.equal(reply.status, 413)
    t.equal(hits, before)
  })
  t.end()
})

t.test('close() waits for in-flight requests, then closes the pools', async (t) => {
  let release: () => void = () => {}
  const released = new Promise<void>((resolve) => (release = resolve))
  let arrived: () => void = () => {}
  const requestArrived = new Promise<void>((resolve) => (arrived = resolve))
  const up = await startUpstream((req, res) => {
    req.resume()
    if (req.url === '/slow') {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.write('slow ')
      arrived()
      void released.then(() => res.end('answer'))
    } else {
      res.end('fast')
    }
  })
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })

  const slow = send(gw.url, { path: '/slow' })
  await requestArrived
  let closed = false
  const closing = gw.proxy.close().then(() => {
    closed = true
  })
  await new Promise((resolve) => setImmediate(resolve))
  t.notOk(closed, 'close() is still waiting for the in-flight request')
  release()
  const reply = await slow
  t.equal(reply.status, 200)
  t.equal(reply.text, 'slow answer', 'the in-flight response was delivered whole')
  await closing
  t.ok(closed)

  const after = await send(gw.url, { path: '/fast' })
  t.equal(after.status, 502, 'a closed proxy no longer forwards')
})

t.test('an identity value that cannot be a header value is refused, not injected', async (t) => {
  let hits = 0
  const up = await startUpstream((req, res) => {
    hits++
    req.resume()
    res.end('ok')
  })
  const gw = await startProxy([routeConfig({ upstream: up.url })], undefined, () => ({ identity: { ...alice, sub: 'alice\r\nX-Admin: yes' } }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const reply = await send(gw.url)
  t.equal(reply.status, 502)
  t.equal(hits, 0, 'nothing reached the upstream')
})

t.test('a request whose client left while it was judged is not forwarded, and holds nothing', async (t) => {
  // The gateway decides asynchronously when a signature or store lookup is
  // not cached yet; the client may close before the decision arrives. Its
  // response has then already emitted 'close', so nothing would ever release
  // an exchange started for it.
  let hits = 0
  const up = await startUpstream((req, res) => {
    hits++
    req.resume()
    res.end('ok')
  })
  const route = routeConfig({ upstream: up.url })
  const { proxy, upstreamOf } = proxyFor([route])
  let judged: () => void = () => {}
  const forwarded = new Promise<void>((resolve) => (judged = resolve))
  const server = createServer((req, res) => {
    // As the app does: the response's one close listener tells the proxy.
    const ctx: RequestContext = { id: 'req-1', log: silentLog, rawPath: '/', rawQuery: '', routeLabel: 'test', closeListener: null, ...contextExtras() }
    res.on('close', () => {
      ctx.closeListener?.onResponseClose()
      // The decision arrives after the client has gone.
      setImmediate(() => {
        proxy.forward(req, res, { route, upstream: upstreamOf(route), path: '/', query: '', identity: alice, body: null }, ctx)
        judged()
      })
    })
  })
  const gw = await listen(server)
  t.teardown(async () => {
    await gw.close()
    await proxy.close()
    await up.close()
  })
  const req = httpRequest(gw.url, { agent: false })
  req.on('error', () => {})
  req.end()
  await once(server, 'request')
  req.destroy()
  await forwarded
  t.equal(proxy.inFlight, 0, 'no exchange is left counted in flight')
  const closing = proxy.close(30_000).then(() => 'closed')
  const stuck = new Promise((resolve) => setTimeout(resolve, 5000).unref()).then(() => 'still waiting')
  t.equal(await Promise.race([closing, stuck]), 'closed', 'close() does not wait for it')
  t.equal(hits, 0, 'nothing reached the upstream')
})
