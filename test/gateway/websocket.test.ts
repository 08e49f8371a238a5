import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { rm } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { connect, type Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import type { Duplex } from 'node:stream'
import { WebSocket } from 'undici'
import type { RequestContext } from '../../src/context.js'
import { alice, gatewayConfig, listen, proxyFor, rawNames, routeConfig, selfSignedCert, silentLog, startProxy, type Listening } from './proxy-helpers.js'
import { contextExtras } from '../helpers/trace.js'

/** RFC 6455 1.3: the value a server proves it understood the handshake with. */
function acceptKey(key: string): string {
  return createHash('sha1')
    .update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11')
    .digest('base64')
}

/** One RFC 6455 5.2 frame; client frames must be masked. */
function frame(opcode: number, payload: Buffer, masked: boolean): Buffer {
  const len = payload.length
  const head = len < 126 ? Buffer.from([0x80 | opcode, len]) : Buffer.from([0x80 | opcode, 126, len >> 8, len & 255])
  if (!masked) return Buffer.concat([head, payload])
  head[1] = (head[1] as number) | 0x80
  const mask = randomBytes(4)
  const body = Buffer.from(payload)
  for (let i = 0; i < body.length; i++) body[i] = (body[i] as number) ^ (mask[i % 4] as number)
  return Buffer.concat([head, mask, body])
}

/** Reads whole frames off a socket as they arrive. */
function frameReader(onFrame: (opcode: number, payload: Buffer) => void): (data: Buffer) => void {
  let buf = Buffer.alloc(0)
  return (data) => {
    buf = Buffer.concat([buf, data])
    for (;;) {
      if (buf.length < 2) return
      const opcode = (buf[0] as number) & 0x0f
      const masked = ((buf[1] as number) & 0x80) !== 0
      let len = (buf[1] as number) & 0x7f
      let offset = 2
      if (len === 126) {
        if (buf.length < 4) return
        len = buf.readUInt16BE(2)
        offset = 4
      }
      const maskLength = masked ? 4 : 0
      if (buf.length < offset + maskLength + len) return
      const payload = Buffer.from(buf.subarray(offset + maskLength, offset + maskLength + len))
      if (masked) {
        const mask = buf.subarray(offset, offset + 4)
        for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] as number) ^ (mask[i % 4] as number)
      }
      buf = buf.subarray(offset + maskLength + len)
      onFrame(opcode, payload)
    }
  }
}

interface SeenUpgrade {
  url: string
  rawHeaders: string[]
  headers: IncomingMessage['headers']
}

/** A WebSocket echo upstream (hand-rolled handshake and framing) recording each upgrade. */
async function echoUpstream(server: Server = createServer()): Promise<Listening & { seen: SeenUpgrade[]; sockets: Duplex[] }> {
  const seen: SeenUpgrade[] = []
  const sockets: Duplex[] = []
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    seen.push({ url: req.url ?? '', rawHeaders: req.rawHeaders, headers: req.headers })
    sockets.push(socket)
    socket.on('error', () => {})
    // Like a real server: the peer's FIN ends the connection.
    socket.on('end', () => socket.end())
    if (req.url?.includes('deny')) {
      socket.end('HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: 6\r\nconnection: close\r\n\r\ndenied')
      return
    }
    if (req.url?.includes('hang')) return
    socket.write(
      'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
        `Sec-WebSocket-Accept: ${acceptKey(String(req.headers['sec-websocket-key']))}\r\n\r\n`,
    )
    const read = frameReader((opcode, payload) => {
      socket.write(frame(opcode, opcode === 1 ? Buffer.from(`echo: ${payload.toString('utf8')}`) : payload, false))
      if (opcode === 8) socket.end()
    })
    if (head.length > 0) read(head)
    socket.on('data', read)
  })
  const l = await listen(server)
  return {
    ...l,
    seen,
    sockets,
    close: async () => {
      for (const s of sockets) s.destroy()
      await l.close()
    },
  }
}

/** Values of one header (case-insensitive) in a raw header list. */
function valuesOf(raw: readonly string[], name: string): string[] {
  const out: string[] = []
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.toLowerCase() === name) out.push(raw[i + 1] ?? '')
  return out
}

/** Open a raw upgrade: returns the socket and everything read until the end of the response head. */
async function rawUpgrade(port: number, path: string, extra: string[] = []): Promise<{ socket: Socket; head: string; rest: Buffer }> {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write(
    [
      `GET ${path} HTTP/1.1`,
      'Host: chat.example.com',
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
      'Sec-WebSocket-Version: 13',
      ...extra,
      '',
      '',
    ].join('\r\n'),
  )
  let buf = Buffer.alloc(0)
  for (;;) {
    const end = buf.indexOf('\r\n\r\n')
    if (end !== -1) return { socket, head: buf.subarray(0, end).toString('latin1'), rest: buf.subarray(end + 4) }
    const [chunk] = (await Promise.race([once(socket, 'data'), once(socket, 'end').then(() => [Buffer.alloc(0)])])) as [Buffer]
    if (chunk.length === 0) return { socket, head: buf.toString('latin1'), rest: Buffer.alloc(0) }
    buf = Buffer.concat([buf, chunk])
  }
}

t.test('a WebSocket echo works through the proxy, and the upstream sees the identity headers', async (t) => {
  const up = await echoUpstream()
  const gw = await startProxy([routeConfig({ upstream: `${up.url}/base` })], gatewayConfig(), () => ({ path: '/chat', query: 'room=1' }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })

  const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/ws/chat?room=1&access_token=secret`)
  await once(ws, 'open')
  const reply = once(ws, 'message')
  ws.send('hello')
  const [event] = (await reply) as [MessageEvent]
  t.equal(event.data, 'echo: hello')
  ws.close()
  await once(ws, 'close')

  const seen = up.seen[0]
  t.equal(seen?.url, '/base/chat?room=1', 'the upstream sees the path the policy judged, under its base path')
  t.equal(seen?.headers['x-auth-subject'], 'alice')
  t.equal(seen?.headers['x-auth-client-id'], 'web')
  t.equal(seen?.headers['x-auth-scope'], 'orders:read orders:write')
  t.equal(seen?.headers['x-forwarded-for'], '127.0.0.1')
  t.equal(seen?.headers.host, new URL(up.url).host)
  t.equal(seen?.headers.upgrade, 'websocket')
  t.match(String(seen?.headers.connection), /upgrade/i)
})

t.test('client-sent identity headers and Authorization follow the same rules on the upgrade path', async (t) => {
  const up = await echoUpstream()
  const strip = routeConfig({ name: 'strip', upstream: up.url })
  const pass = routeConfig({ name: 'pass', upstream: up.url, forwardAuthorization: true, preserveHost: true })
  const gw = await startProxy([strip, pass], gatewayConfig(), (req) => ({ route: req.url?.startsWith('/pass') ? pass : strip }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })

  const spoof = ['X-Auth-Subject: mallory', 'X_Auth_Subject: mallory2', 'x-auth_scope: admin', 'Authorization: Bearer abc', 'X-Forwarded-For: 6.6.6.6']
  for (const path of ['/strip', '/pass']) {
    const { socket, head } = await rawUpgrade(gw.port, path, spoof)
    t.match(head, /^HTTP\/1\.1 101 /, `${path}: switched`)
    socket.destroy()
  }
  const [stripped, passed] = up.seen
  for (const seen of [stripped, passed]) {
    const raw = seen?.rawHeaders ?? []
    t.notOk(
      rawNames(raw).some((n) => n.includes('_')),
      'no underscore variant',
    )
    t.same(valuesOf(raw, 'x-auth-subject'), ['alice'])
    t.same(valuesOf(raw, 'x-auth-scope'), ['orders:read orders:write'])
    t.same(valuesOf(raw, 'x-forwarded-for'), ['127.0.0.1'])
  }
  t.same(valuesOf(stripped?.rawHeaders ?? [], 'authorization'), [])
  t.same(valuesOf(passed?.rawHeaders ?? [], 'authorization'), ['Bearer abc'])
  t.equal(passed?.headers.host, 'chat.example.com', 'preserve_host keeps the client Host')
})

t.test('an upstream that refuses the connection gets the client a 502 and a closed socket', async (t) => {
  const dead = await listen(createServer())
  await dead.close()
  const gw = await startProxy([routeConfig({ upstream: dead.url })])
  t.teardown(() => gw.close())
  const { socket, head, rest } = await rawUpgrade(gw.port, '/chat')
  t.match(head, /^HTTP\/1\.1 502 Bad Gateway/)
  if (!socket.readableEnded) await once(socket, 'close')
  t.same(JSON.parse(rest.toString('utf8')), { error: 'bad_gateway', error_description: 'The upstream could not be reached' })
})

t.test('an upstream that never answers the handshake gets the client a 504', async (t) => {
  const up = await echoUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url, timeouts: { connectMs: 100, headersMs: 100, idleMs: 1000 } })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const { head } = await rawUpgrade(gw.port, '/hang')
  t.match(head, /^HTTP\/1\.1 504 Gateway Timeout/)
})

t.test("an upstream's refusal to upgrade is passed to the client", async (t) => {
  const up = await echoUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const { head, socket, rest } = await rawUpgrade(gw.port, '/deny')
  t.match(head, /^HTTP\/1\.1 403 Forbidden/)
  let body = rest.toString('utf8')
  socket.setEncoding('utf8')
  socket.on('data', (c: string) => (body += c))
  if (!socket.readableEnded) await once(socket, 'end')
  t.equal(body, 'denied')
})

t.test('closing either side of a tunnel closes the other', async (t) => {
  const up = await echoUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const { socket, head } = await rawUpgrade(gw.port, '/chat')
  t.match(head, /^HTTP\/1\.1 101 /)
  const echoed = new Promise<string>((resolve) =>
    socket.on(
      'data',
      frameReader((_op, payload) => resolve(payload.toString('utf8'))),
    ),
  )
  socket.write(frame(1, Buffer.from('ping'), true))
  t.equal(await echoed, 'echo: ping')
  const upstreamSocket = up.sockets[0] as Duplex
  const upstreamClosed = once(upstreamSocket, 'close')
  socket.destroy()
  await upstreamClosed
  t.pass('the upstream side closed when the client vanished')

  const second = await rawUpgrade(gw.port, '/chat')
  const clientClosed = once(second.socket, 'close')
  ;(up.sockets[1] as Duplex).destroy()
  await clientClosed
  t.pass('the client side closed when the upstream vanished')
})

t.test('a wss upstream is verified against upstream_ca', async (t) => {
  const tls = await selfSignedCert()
  const up = await echoUpstream(createHttpsServer({ cert: tls.cert, key: tls.key }) as unknown as Server)
  const upstream = `https://127.0.0.1:${up.port}`
  const trusted = routeConfig({ name: 'trusted', upstream, upstreamCaFile: tls.certFile })
  const untrusted = routeConfig({ name: 'untrusted', upstream })
  const gw = await startProxy([trusted, untrusted], gatewayConfig(), (req) => ({ route: req.url?.startsWith('/untrusted') ? untrusted : trusted }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
    await rm(tls.dir, { recursive: true, force: true })
  })

  const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/trusted`)
  await once(ws, 'open')
  const reply = once(ws, 'message')
  ws.send('over tls')
  const [event] = (await reply) as [MessageEvent]
  t.equal(event.data, 'echo: over tls')
  ws.close()
  await once(ws, 'close')

  const { head } = await rawUpgrade(gw.port, '/untrusted')
  t.match(head, /^HTTP\/1\.1 502 /, 'a certificate outside upstream_ca is refused')
})

t.test('preserve_host to a wss upstream checks the upstream name, not the client Host', async (t) => {
  const tls = await selfSignedCert()
  const server = createHttpsServer({ cert: tls.cert, key: tls.key })
  const servernames: unknown[] = []
  server.on('secureConnection', (socket: TLSSocket) => servernames.push(socket.servername))
  const up = await echoUpstream(server as unknown as Server)
  // The certificate names localhost and 127.0.0.1; the client says chat.example.com.
  const named = routeConfig({ name: 'named', upstream: `wss://localhost:${up.port}`, upstreamCaFile: tls.certFile, preserveHost: true })
  const address = routeConfig({ name: 'address', upstream: `wss://127.0.0.1:${up.port}`, upstreamCaFile: tls.certFile, preserveHost: true })
  const gw = await startProxy([named, address], gatewayConfig(), (req) => ({ route: req.url?.startsWith('/address') ? address : named }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
    await rm(tls.dir, { recursive: true, force: true })
  })

  for (const path of ['/named', '/address']) {
    const { socket, head } = await rawUpgrade(gw.port, path)
    t.match(head, /^HTTP\/1\.1 101 /, `${path}: the handshake went through`)
    socket.destroy()
  }
  t.same(servernames, ['localhost', false], 'SNI is the upstream host name, none for an address')
  t.same(
    up.seen.map((s) => s.headers.host),
    ['chat.example.com', 'chat.example.com'],
    'the upstream still receives the client Host',
  )
})

t.test('after close() new upgrades are refused with 502', async (t) => {
  const up = await echoUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  await gw.proxy.close()
  const { head } = await rawUpgrade(gw.port, '/chat')
  t.match(head, /^HTTP\/1\.1 502 /)
  t.equal(up.seen.length, 0)
})

t.test('an identity value that cannot be a header value gets the client a 502', async (t) => {
  const up = await echoUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url })], gatewayConfig(), () => ({ identity: { ...alice, sub: 'alice\r\nX-Admin: yes' } }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const { head } = await rawUpgrade(gw.port, '/chat')
  t.match(head, /^HTTP\/1\.1 502 /)
  t.equal(up.seen.length, 0, 'nothing reached the upstream')
})

t.test('an upgrade whose client left while it was judged is not forwarded', async (t) => {
  const up = await echoUpstream()
  const route = routeConfig({ upstream: up.url })
  const { proxy, upstreamOf } = proxyFor([route])
  let judgedGone: () => void = () => {}
  const goneJudged = new Promise<void>((resolve) => (judgedGone = resolve))
  const server = createServer()
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const ctx: RequestContext = {
      id: 'req-1',
      log: silentLog,
      rawPath: req.url ?? '/',
      rawQuery: '',
      routeLabel: 'test',
      closeListener: null,
      ...contextExtras(),
    }
    const forward = (): void =>
      proxy.upgrade(req, socket, head, { route, upstream: upstreamOf(route), path: req.url ?? '/', query: '', identity: alice, body: null }, ctx)
    // /gone: the decision arrives after the client closed its socket.
    if (req.url === '/gone') {
      // The server's sockets allow half-open connections: the client's FIN
      // ends nothing by itself. Here it is taken as gone, and the socket
      // destroyed and closed, before the decision arrives.
      socket.once('end', () => socket.destroy())
      socket.once('close', () =>
        setImmediate(() => {
          forward()
          judgedGone()
        }),
      )
      // An upgraded socket is not read until someone does: read, to see the FIN.
      socket.resume()
    } else {
      forward()
    }
  })
  const gw = await listen(server)
  t.teardown(async () => {
    await gw.close()
    await proxy.close()
    await up.close()
  })
  const gone = connect(gw.port, '127.0.0.1')
  await once(gone, 'connect')
  gone.write(
    'GET /gone HTTP/1.1\r\nHost: chat.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  )
  await once(server, 'upgrade')
  gone.destroy()
  await goneJudged
  // A forwarded handshake reaches the local upstream within milliseconds.
  const arrived = await Promise.race([once(up.server, 'upgrade').then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 500))])
  t.equal(arrived, false, 'no handshake reached the upstream for the departed client')
  // A later upgrade through the same proxy does arrive: the upstream is reachable.
  const { socket, head } = await rawUpgrade(gw.port, '/chat')
  socket.destroy()
  t.match(head, /^HTTP\/1\.1 101 /)
  t.same(
    up.seen.map((s) => s.url),
    ['/chat'],
    'only the upgrade whose client stayed reached the upstream',
  )
})

t.test('a half-close passes through the tunnel: the client FIN reaches the upstream, whose answer and FIN come back', async (t) => {
  const up = await echoUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const { socket, head, rest } = await rawUpgrade(gw.port, '/chat')
  t.match(head, /^HTTP\/1\.1 101 /)
  t.equal(rest.length, 0)
  const frames: string[] = []
  socket.on(
    'data',
    frameReader((_op, payload) => frames.push(payload.toString('utf8'))),
  )
  const ended = once(socket, 'end')
  // The frame and the FIN leave together: the upstream must still echo the frame.
  socket.end(frame(1, Buffer.from('last words'), true))
  await ended
  t.same(frames, ['echo: last words'], 'the echo arrived before the upstream ended its side')
  t.ok((up.sockets[0] as Duplex).readableEnded, 'the upstream saw the client FIN')
})

t.test('an upgrade to anything but websocket, or not by GET, is dropped without reaching the upstream', async (t) => {
  const up = await echoUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  for (const request of [
    'GET /chat HTTP/1.1\r\nHost: chat.example.com\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n',
    'POST /chat HTTP/1.1\r\nHost: chat.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nContent-Length: 0\r\n\r\n',
  ]) {
    const socket = connect(gw.port, '127.0.0.1')
    await once(socket, 'connect')
    let received = ''
    socket.on('data', (c: Buffer) => (received += c.toString('latin1')))
    socket.write(request)
    await once(socket, 'close')
    t.equal(received, '', `${request.split('\r\n')[0]}: closed without an answer`)
  }
  t.equal(up.seen.length, 0, 'nothing reached the upstream')
})
