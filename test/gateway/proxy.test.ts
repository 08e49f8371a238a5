import t from 'tap'
import { connect } from 'node:net'
import { request as httpRequest } from 'node:http'
import { once } from 'node:events'
import { rawNames, routeConfig, send, startProxy, startUpstream, type Listening } from './proxy-helpers.js'

interface Seen {
  method: string
  url: string
  rawHeaders: string[]
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** An upstream that records each request and answers with `answer` (default: 200 "ok"). */
async function recordingUpstream(
  answer: (seen: Seen, res: import('node:http').ServerResponse) => void = (_s, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end('ok')
  },
): Promise<Listening & { seen: Seen[] }> {
  const seen: Seen[] = []
  const up = await startUpstream((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const s: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        rawHeaders: req.rawHeaders,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      }
      seen.push(s)
      answer(s, res)
    })
  })
  return { ...up, seen }
}

t.test('GET passes status, headers, body, path and query through', async (t) => {
  const up = await recordingUpstream((_s, res) => {
    res.writeHead(201, 'Made It', { 'content-type': 'application/json', 'x-upstream': 'yes' })
    res.end('{"ok":true}')
  })
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })

  const reply = await send(gw.url, { path: '/orders/42?expand=items&x=%20', headers: { accept: 'application/json', cookie: 'a=1' } })
  t.equal(reply.status, 201)
  t.equal(reply.headers['content-type'], 'application/json')
  t.equal(reply.headers['x-upstream'], 'yes')
  t.equal(reply.text, '{"ok":true}')
  const s = up.seen[0]
  t.equal(s?.method, 'GET')
  t.equal(s?.url, '/orders/42?expand=items&x=%20')
  t.equal(s?.headers.accept, 'application/json')
  t.equal(s?.headers.cookie, 'a=1', 'cookies are passed through')
})

t.test('the path sent is the one the policy judged, joined to the upstream base path', async (t) => {
  const up = await recordingUpstream()
  const gw = await startProxy([routeConfig({ upstream: `${up.url}/base` })], undefined, () => ({ path: '/x/y', query: 'q=1' }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  await send(gw.url, { path: '/ignored/../raw?access_token=secret' })
  t.equal(up.seen[0]?.url, '/base/x/y?q=1')

  const gw2 = await startProxy([routeConfig({ upstream: `${up.url}/base/` })], undefined, () => ({ path: '/', query: '' }))
  t.teardown(() => gw2.close())
  await send(gw2.url, { path: '/anything' })
  t.equal(up.seen[1]?.url, '/base/', 'a trailing slash on the upstream URL does not double')
})

t.test('POST bodies stream through, with Content-Length or chunked', async (t) => {
  const up = await recordingUpstream((s, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end(`got ${s.body.length}: ${s.body} te=${String(s.headers['transfer-encoding'])} cl=${String(s.headers['content-length'])}`)
  })
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })

  const fixed = await send(gw.url, { method: 'POST', path: '/p', body: 'hello=world', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(fixed.text, 'got 11: hello=world te=undefined cl=11')
  t.equal(up.seen[0]?.headers['content-type'], 'application/x-www-form-urlencoded')

  const chunked = await new Promise<string>((resolve, reject) => {
    const req = httpRequest(`${gw.url}/p`, { method: 'PUT', agent: false, headers: { 'transfer-encoding': 'chunked' } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (text += c))
      res.on('end', () => resolve(text))
    })
    req.on('error', reject)
    req.write('part1,')
    req.end('part2')
  })
  // undici sends a stream that already ended with a Content-Length, else chunked: either way the body is whole.
  t.match(chunked, /^got 11: part1,part2 (te=chunked cl=undefined|te=undefined cl=11)$/)
})

t.test('a body the gateway already read (fwd.body) is sent instead of the stream', async (t) => {
  const up = await recordingUpstream((s, res) => res.end(`${s.body}|${String(s.headers['content-length'])}`))
  const gw = await startProxy([routeConfig({ upstream: up.url })], undefined, () => ({ body: Buffer.from('a=1&b=2') }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  // The client's own body is long gone (the gateway consumed it); what it declared does not matter.
  const reply = await send(gw.url, { method: 'POST', body: 'access_token=secret&a=1&b=2', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
  t.equal(reply.text, 'a=1&b=2|7')
})

t.test('hop-by-hop headers are removed in both directions, with those Connection names', async (t) => {
  const up = await startUpstream((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, [
        'Connection',
        'keep-alive, X-Up-Hop',
        'Keep-Alive',
        'timeout=99, max=7',
        'X-Up-Hop',
        'drop me',
        'Proxy-Authenticate',
        'Basic realm="up"',
        'Upgrade',
        'h2c',
        'X-Up-Keep',
        'keep me',
        'Trailer',
        'x-checksum',
        'X-Seen',
        JSON.stringify(req.rawHeaders),
      ])
      res.end('body')
    })
  })
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })

  const reply = await send(gw.url, {
    headers: {
      Connection: 'keep-alive, X-Client-Hop, x_other_hop',
      'Keep-Alive': 'timeout=5',
      'X-Client-Hop': 'drop',
      'X-Other-Hop': 'drop too',
      'Proxy-Authorization': 'Basic c2VjcmV0',
      'Proxy-Connection': 'keep-alive',
      TE: 'trailers, deflate',
      Trailer: 'x-foo',
      'Transfer-Encoding': 'chunked',
      Upgrade: 'h2c',
      'X-Client-Keep': 'keep',
    },
  })
  const seenRaw = JSON.parse(reply.headers['x-seen'] as string) as string[]
  const seen = rawNames(seenRaw)
  // undici announces its own keep-alive; the client's Connection list is not passed on.
  t.same(
    seenRaw.filter((_, i) => i > 0 && seenRaw[i - 1]?.toLowerCase() === 'connection'),
    ['keep-alive'],
  )
  for (const name of ['keep-alive', 'x-client-hop', 'x-other-hop', 'proxy-authorization', 'proxy-connection', 'trailer', 'upgrade']) {
    t.notOk(seen.includes(name), `request: ${name} removed`)
  }
  t.ok(seen.includes('x-client-keep'), 'request: end-to-end header kept')
  t.ok(seen.includes('te'), 'request: te: trailers kept')

  const names = rawNames(reply.rawHeaders)
  for (const name of ['x-up-hop', 'proxy-authenticate', 'upgrade']) t.notOk(names.includes(name), `response: ${name} removed`)
  t.not(reply.headers['keep-alive'], 'timeout=99, max=7', "response: the upstream's Keep-Alive is not relayed (Node writes its own)")
  t.equal(reply.headers['x-up-keep'], 'keep me')
  t.equal(reply.headers.trailer, 'x-checksum', 'response: Trailer announces trailers and is kept')
  t.equal(reply.text, 'body')
})

t.test('te is forwarded only as "trailers"', async (t) => {
  const up = await recordingUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  await send(gw.url, { headers: { TE: 'trailers, gzip' } })
  await send(gw.url, { headers: { TE: 'gzip' } })
  t.equal(up.seen[0]?.headers.te, 'trailers')
  t.equal(up.seen[1]?.headers.te, undefined)
})

t.test('Host is the upstream host unless preserve_host', async (t) => {
  const up = await recordingUpstream()
  const rewrite = routeConfig({ name: 'rewrite', upstream: up.url })
  const keep = routeConfig({ name: 'keep', upstream: up.url, preserveHost: true })
  const gw = await startProxy([rewrite, keep], undefined, (req) => ({ route: req.url?.startsWith('/keep') ? keep : rewrite }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  await send(gw.url, { path: '/rewrite', headers: { host: 'api.example.com' } })
  await send(gw.url, { path: '/keep', headers: { host: 'api.example.com' } })
  t.equal(up.seen[0]?.headers.host, new URL(up.url).host)
  t.equal(up.seen[0]?.headers['x-forwarded-host'], 'api.example.com', 'the client host travels in X-Forwarded-Host')
  t.equal(up.seen[1]?.headers.host, 'api.example.com')
})

t.test('Authorization reaches the upstream only with forward_authorization', async (t) => {
  const up = await recordingUpstream()
  const strip = routeConfig({ name: 'strip', upstream: up.url })
  const pass = routeConfig({ name: 'pass', upstream: up.url, forwardAuthorization: true })
  const gw = await startProxy([strip, pass], undefined, (req) => ({ route: req.url === '/pass' ? pass : strip }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  await send(gw.url, { path: '/strip', headers: { authorization: 'Bearer abc' } })
  await send(gw.url, { path: '/pass', headers: { authorization: 'Bearer abc' } })
  t.equal(up.seen[0]?.headers.authorization, undefined)
  t.equal(up.seen[1]?.headers.authorization, 'Bearer abc')
})

t.test('several Set-Cookie headers stay separate', async (t) => {
  const up = await recordingUpstream((_s, res) => {
    res.setHeader('set-cookie', ['a=1; Path=/', 'b=2; HttpOnly', 'c=3'])
    res.end('ok')
  })
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const reply = await send(gw.url)
  t.same(reply.headers['set-cookie'], ['a=1; Path=/', 'b=2; HttpOnly', 'c=3'])
})

t.test('HEAD, 204 and 304 answers carry no body', async (t) => {
  const up = await recordingUpstream((s, res) => {
    if (s.url === '/204') {
      res.writeHead(204, { 'x-kind': 'no-content' })
      res.end()
    } else if (s.url === '/304') {
      res.writeHead(304, { etag: '"v1"' })
      res.end()
    } else {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '12' })
      res.end(s.method === 'HEAD' ? undefined : 'hello, world')
    }
  })
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const head = await send(gw.url, { method: 'HEAD', path: '/x' })
  t.equal(head.status, 200)
  t.equal(head.headers['content-length'], '12', 'HEAD keeps the length of the body it does not carry')
  t.equal(head.body.length, 0)
  const noContent = await send(gw.url, { path: '/204' })
  t.equal(noContent.status, 204)
  t.equal(noContent.headers['x-kind'], 'no-content')
  t.equal(noContent.body.length, 0)
  const notModified = await send(gw.url, { path: '/304', headers: { 'if-none-match': '"v1"' } })
  t.equal(notModified.status, 304)
  t.equal(notModified.headers.etag, '"v1"')
  t.equal(notModified.body.length, 0)
  t.equal(up.seen[2]?.headers['if-none-match'], '"v1"')
  // The connection is still usable after bodiless answers (keep-alive to the upstream).
  const after = await send(gw.url, { path: '/x' })
  t.equal(after.text, 'hello, world')
})

t.test('trailers from a chunked upstream response reach the client', async (t) => {
  const up = await startUpstream((req, res) => {
    req.resume()
    res.writeHead(200, { 'content-type': 'text/plain', trailer: 'x-checksum' })
    res.write('part one, ')
    res.write('part two')
    res.addTrailers({ 'x-checksum': 'abc123' })
    res.end()
  })
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const reply = await send(gw.url, { headers: { te: 'trailers' } })
  t.equal(reply.text, 'part one, part two')
  t.equal(reply.headers['transfer-encoding'], 'chunked')
  t.same(reply.trailers, { 'x-checksum': 'abc123' })
})

t.test('Expect: 100-continue: the client gets 100 from the gateway, the upstream gets the body without Expect', async (t) => {
  const up = await recordingUpstream((s, res) => res.end(`body=${s.body} expect=${String(s.headers.expect)}`))
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const result = await new Promise<{ continued: boolean; text: string }>((resolve, reject) => {
    let continued = false
    const req = httpRequest(`${gw.url}/upload`, {
      method: 'POST',
      agent: false,
      headers: { expect: '100-continue', 'content-length': '5' },
    })
    req.on('continue', () => {
      continued = true
      req.end('hello')
    })
    req.on('response', (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (text += c))
      res.on('end', () => resolve({ continued, text }))
    })
    req.on('error', reject)
    req.flushHeaders()
  })
  t.ok(result.continued, 'the client was told to continue')
  t.equal(result.text, 'body=hello expect=undefined')
})

t.test('the request method and a raw request line are passed as sent', async (t) => {
  const up = await recordingUpstream((s, res) => res.end(`${s.method} ${s.url}`))
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const reply = await send(gw.url, { method: 'DELETE', path: '/items/7' })
  t.equal(reply.text, 'DELETE /items/7')
  const patch = await send(gw.url, { method: 'PATCH', path: '/items/7', body: '{}', headers: { 'content-type': 'application/json' } })
  t.equal(patch.text, 'PATCH /items/7')

  // HTTP/1.0 client without Host: the upstream still gets its own Host.
  const socket = connect(gw.port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write('GET /old HTTP/1.0\r\n\r\n')
  let raw = ''
  socket.setEncoding('utf8')
  socket.on('data', (c: string) => (raw += c))
  await once(socket, 'end')
  t.match(raw, /^HTTP\/1\.1 200/)
  t.match(raw, /GET \/old$/)
  t.equal(up.seen.at(-1)?.headers.host, new URL(up.url).host)
})
