import t from 'tap'
import { rm } from 'node:fs/promises'
import { createServer } from 'node:https'
import type { TLSSocket } from 'node:tls'
import { join } from 'node:path'
import { gatewayConfig, listen, proxyFor, routeConfig, selfSignedCert, send, startProxy } from './proxy-helpers.js'

t.test('https upstreams are verified against upstream_ca', async (t) => {
  const tls = await selfSignedCert()
  const up = await listen(
    createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
      req.resume()
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end(`secure ${req.url ?? ''} host=${req.headers.host ?? ''}`)
    }),
  )
  const upstream = `https://127.0.0.1:${up.port}`
  const trusted = routeConfig({ name: 'trusted', upstream, upstreamCaFile: tls.certFile })
  const untrusted = routeConfig({ name: 'untrusted', upstream })
  const gw = await startProxy([trusted, untrusted], gatewayConfig(), (req) => ({ route: req.url?.startsWith('/untrusted') ? untrusted : trusted }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
    await rm(tls.dir, { recursive: true, force: true })
  })

  const ok = await send(gw.url, { path: '/trusted?x=1' })
  t.equal(ok.status, 200)
  t.equal(ok.text, `secure /trusted?x=1 host=127.0.0.1:${up.port}`)

  const refused = await send(gw.url, { path: '/untrusted' })
  t.equal(refused.status, 502, 'a certificate outside the system roots and upstream_ca is refused')
  t.equal(JSON.parse(refused.text).error, 'bad_gateway')
})

t.test('an unreadable upstream_ca fails construction, naming the route', async (t) => {
  t.throws(
    () => proxyFor([routeConfig({ name: 'orders', upstream: 'https://127.0.0.1:1', upstreamCaFile: join('/nonexistent', 'ca.pem') })], gatewayConfig()),
    { message: /route orders: cannot read upstream_ca \/nonexistent\/ca\.pem: ENOENT/ },
  )
  t.throws(() => proxyFor([routeConfig({ upstream: 'ftp://example.com' })], gatewayConfig()), {
    message: /route test: upstream must be an http\(s\) or ws\(s\) URL/,
  })
  t.throws(() => proxyFor([routeConfig({ upstream: 'http://127.0.0.1:1' })], gatewayConfig({ trustedProxies: ['nope'] })), TypeError)
})

t.test('preserve_host to an https upstream checks the upstream name (or address), not the client Host', async (t) => {
  const tls = await selfSignedCert()
  const sni = new Map<string, Set<unknown>>()
  const up = await listen(
    createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
      const route = (req.url ?? '').split('/')[1] ?? ''
      if (!sni.has(route)) sni.set(route, new Set())
      sni.get(route)?.add((req.socket as TLSSocket).servername)
      req.resume()
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end(`host=${req.headers.host ?? ''}`)
    }),
  )
  const warnings: string[] = []
  const onWarning = (w: Error): void => void warnings.push(w.message)
  process.on('warning', onWarning)
  // The certificate names localhost and 127.0.0.1; the clients name hosts it does not cover.
  const named = routeConfig({ name: 'named', upstream: `https://localhost:${up.port}`, upstreamCaFile: tls.certFile, preserveHost: true })
  const address = routeConfig({ name: 'address', upstream: `https://127.0.0.1:${up.port}`, upstreamCaFile: tls.certFile, preserveHost: true })
  const gw = await startProxy([named, address], gatewayConfig(), (req) => ({ route: req.url?.startsWith('/address') ? address : named }))
  t.teardown(async () => {
    process.off('warning', onWarning)
    await gw.close()
    await up.close()
    await rm(tls.dir, { recursive: true, force: true })
  })

  for (const path of ['/named', '/address']) {
    for (const host of ['api.example.com', 'shop.example.com', 'api.example.com']) {
      const reply = await send(gw.url, { path, headers: { host } })
      t.equal(reply.status, 200, `${path}, Host ${host}: the upstream certificate is checked against the upstream, not the Host`)
      t.equal(reply.text, `host=${host}`, 'the upstream still receives the client Host')
    }
  }
  t.same([...(sni.get('named') ?? [])], ['localhost'], 'SNI is the upstream name on every request')
  t.same([...(sni.get('address') ?? [])], [false], 'no SNI for an address: RFC 6066 names hosts only')
  t.same(
    warnings.filter((m) => /ServerName/i.test(m)),
    [],
    'no TLS ServerName warning',
  )
})
