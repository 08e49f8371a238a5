/**
 * The gateway enforces certificate-bound access tokens (RFC 8705 3) on every
 * route, through bin/bearward: a token with `cnf.x5t#S256` is accepted only
 * over a connection presenting that certificate, or from a trusted proxy's
 * certificate header; without it, with another certificate, or with a header
 * from a peer that is not a trusted proxy it is 401 invalid_token and nothing
 * is forwarded. A route with `sender_constraint: required` takes no unbound
 * token at all. The certificate header never reaches an upstream.
 */
import { X509Certificate } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { connect as http2Connect } from 'node:http2'
import { request as httpsRequest } from 'node:https'
import t from 'tap'
import { decodeJwt } from 'jose'
import { Agent, fetch as undiciFetch } from 'undici'
import { certificateThumbprint } from '../../src/http/client-certificate.js'
import { asConfig, DEMO_SECRET } from '../helpers/as-config.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { basic } from '../helpers/client-auth.js'
import { configYaml } from '../helpers/config-tree.js'
import { freePort } from '../helpers/http.js'
import { certificateAuthority, clientCertificate, type IssuedCertificate, selfSignedCert } from '../helpers/tls.js'
import { startUpstream } from '../helpers/upstream.js'

const PAYMENTS = {
  client_id: 'payments',
  type: 'confidential',
  token_endpoint_auth_method: 'tls_client_auth',
  tls_client_auth_san_dns: 'payments.example.com',
  grant_types: ['client_credentials'],
  scopes: ['orders:read'],
  tls_client_certificate_bound_access_tokens: true,
}
const STRICT_ROUTE = { name: 'strict', match: { path: '/strict' }, token: 'any', scopes: { GET: ['orders:read'] }, sender_constraint: 'required' }

/** A PEM as nginx's `$ssl_client_escaped_cert` sends it. */
const escapedPem = (cert: IssuedCertificate): string => encodeURIComponent(cert.cert)

/** GET over HTTP/2 (node:http2, so h2 for certain), presenting `cert` or none. */
function h2Get(url: string, ca: string, cert: IssuedCertificate | null, path: string, token: string): Promise<{ status: number; challenge: string }> {
  return new Promise((resolve, reject) => {
    const session = http2Connect(url, { ca, ...(cert === null ? {} : { cert: cert.cert, key: cert.key }) })
    session.on('error', reject)
    const req = session.request({ ':path': path, authorization: `Bearer ${token}` })
    req.on('response', (headers) => {
      req.resume()
      req.on('end', () => {
        session.close()
        resolve({ status: Number(headers[':status']), challenge: String(headers['www-authenticate'] ?? '') })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

/** A WebSocket upgrade request over HTTPS/1.1, presenting `cert` or none: the answer's status and challenge. */
function upgrade(url: string, ca: string, cert: IssuedCertificate | null, path: string, token: string): Promise<{ status: number; challenge: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(`${url}${path}`, {
      ca,
      ...(cert === null ? {} : { cert: cert.cert, key: cert.key }),
      agent: false,
      headers: {
        authorization: `Bearer ${token}`,
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
      },
    })
    req.on('response', (res) => {
      res.resume()
      resolve({ status: res.statusCode ?? 0, challenge: String(res.headers['www-authenticate'] ?? '') })
    })
    req.on('upgrade', (res, socket) => {
      socket.destroy()
      resolve({ status: res.statusCode ?? 0, challenge: '' })
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('over its own TLS listener, a certificate-bound token needs its certificate on every route', async (t) => {
  const up = await startUpstream('orders')
  const port = await freePort()
  const cfg = await tempConfig('')
  const server = selfSignedCert(cfg.dir, 'server')
  const ca = certificateAuthority(cfg.dir, 'ca')
  const names = { subject: '/CN=payments', san: ['DNS:payments.example.com'] }
  const svc = clientCertificate(cfg.dir, 'svc', names, ca)
  const other = clientCertificate(cfg.dir, 'other', names, ca)
  const tls = { cert_file: server.certFile, key_file: server.keyFile, client_ca: ca.certFile, client_certificates: 'optional' }
  const config = await asConfig({
    port,
    upstream: up.url,
    routes: [{ ...STRICT_ROUTE, upstream: up.url }],
    // The header is configured, and 127.0.0.1 is not a trusted proxy here: its header must not count.
    override: { public_url: `https://127.0.0.1:${port}`, tls, http2: { tls: true }, gateway: { client_certificate_header: 'x-client-cert' } },
  })
  config.authorization_server.clients.push({ ...PAYMENTS })
  await writeFile(cfg.file, configYaml(config))
  const bin = await startBin(cfg.file)
  const agent = (cert: IssuedCertificate | null): Agent =>
    new Agent({ connect: { ca: server.cert, ...(cert === null ? {} : { cert: cert.cert, key: cert.key }) } })
  const agents = { svc: agent(svc), other: agent(other), none: agent(null) }
  t.teardown(async () => {
    await Promise.all(Object.values(agents).map((a) => a.close()))
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const get = async (a: Agent, path: string, token: string, headers: Record<string, string> = {}) => {
    const res = await undiciFetch(`${bin.url}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers }, dispatcher: a })
    return { status: res.status, challenge: res.headers.get('www-authenticate') ?? '', body: await res.text() }
  }
  const tokenRes = await undiciFetch(`${bin.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&client_id=payments&scope=orders:read',
    dispatcher: agents.svc,
  })
  const bound = String(((await tokenRes.json()) as Record<string, unknown>).access_token)
  t.same(decodeJwt(bound).cnf, { 'x5t#S256': certificateThumbprint(new X509Certificate(svc.cert).raw) }, 'the token is bound to svc')

  t.test('with its certificate: served, on a plain route and a sender_constraint: required one', async (t) => {
    for (const path of ['/orders/1', '/strict/1']) {
      const before = up.seen.length
      const ok = await get(agents.svc, path, bound)
      t.equal(ok.status, 200, `${path}: ${ok.body}`)
      t.equal(up.seen.length, before + 1)
      t.equal(up.seen.at(-1)?.headers['x-client-cert'], undefined, 'no certificate header upstream')
    }
  })

  t.test('without a certificate, with another, or with a header from a peer that is no trusted proxy: 401, nothing forwarded', async (t) => {
    const before = up.seen.length
    const cases: Array<[string, Agent, Record<string, string>, RegExp]> = [
      ['no certificate', agents.none, {}, /present it/],
      ['another certificate of the same CA and names', agents.other, {}, /another client certificate/],
      ['no certificate, the right one in an untrusted header', agents.none, { 'x-client-cert': escapedPem(svc) }, /present it/],
      ['another certificate, the right one in an untrusted header', agents.other, { 'x-client-cert': escapedPem(svc) }, /another client certificate/],
    ]
    for (const [label, a, headers, why] of cases) {
      for (const path of ['/orders/1', '/strict/1']) {
        const refused = await get(a, path, bound, headers)
        t.equal(refused.status, 401, `${label} ${path}`)
        t.match(refused.challenge, /error="invalid_token"/, `${label} ${path}: invalid_token`)
        t.match(refused.challenge, why, `${label} ${path}: the challenge says why`)
      }
    }
    t.equal(up.seen.length, before, 'nothing reached the upstream')
  })

  t.test('over HTTP/2 and on a WebSocket upgrade too: the certificate of the connection, or 401 and nothing forwarded', async (t) => {
    const before = up.seen.length
    for (const [label, cert, want] of [
      ['svc', svc, 200],
      ['no certificate', null, 401],
      ['another certificate', other, 401],
    ] as const) {
      const res = await h2Get(bin.url, server.cert, cert, '/orders/h2', bound)
      t.equal(res.status, want, `HTTP/2, ${label}`)
      if (want === 401) t.match(res.challenge, /error="invalid_token"/)
    }
    t.equal(up.seen.length, before + 1, 'only the request with its certificate was forwarded')
    for (const [label, cert] of [
      ['no certificate', null],
      ['another certificate', other],
    ] as const) {
      const res = await upgrade(bin.url, server.cert, cert, '/orders/ws', bound)
      t.equal(res.status, 401, `WebSocket upgrade, ${label}`)
      t.match(res.challenge, /error="invalid_token"/)
    }
    t.equal(up.seen.length, before + 1, 'no upgrade reached the upstream')
  })

  t.test('sender_constraint: required refuses an unbound token that the plain route takes', async (t) => {
    const res = await undiciFetch(`${bin.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('service', DEMO_SECRET) },
      body: 'grant_type=client_credentials&scope=orders:read',
      dispatcher: agents.none,
    })
    const unbound = String(((await res.json()) as Record<string, unknown>).access_token)
    t.equal(decodeJwt(unbound).cnf, undefined)
    t.equal((await get(agents.svc, '/orders/2', unbound)).status, 200, 'a plain route takes it')
    const before = up.seen.length
    const strict = await get(agents.svc, '/strict/2', unbound)
    t.equal(strict.status, 401)
    t.match(strict.challenge, /error="invalid_token"/)
    t.match(strict.challenge, /sender-constrained/)
    t.equal(up.seen.length, before, 'nothing reached the upstream')
  })
})

t.test('behind a trusted proxy, the certificate comes from its header only, and the header never goes upstream', async (t) => {
  const up = await startUpstream('orders')
  const port = await freePort()
  const cfg = await tempConfig('')
  const ca = certificateAuthority(cfg.dir, 'ca')
  const names = { subject: '/CN=payments', san: ['DNS:payments.example.com'] }
  const svc = clientCertificate(cfg.dir, 'svc', names, ca)
  const other = clientCertificate(cfg.dir, 'other', names, ca)
  const config = await asConfig({
    port,
    upstream: up.url,
    routes: [{ ...STRICT_ROUTE, upstream: up.url }],
    override: { gateway: { client_certificate_header: 'x-client-cert', trusted_proxies: ['127.0.0.1'] } },
  })
  config.authorization_server.clients.push({ ...PAYMENTS })
  await writeFile(cfg.file, configYaml(config))
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const post = await fetch(`${bin.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-client-cert': escapedPem(svc) },
    body: 'grant_type=client_credentials&client_id=payments&scope=orders:read',
  })
  t.equal(post.status, 200, 'the proxy-reported certificate authenticates the client')
  const bound = String(((await post.json()) as Record<string, unknown>).access_token)
  const get = (path: string, headers: Record<string, string>) => fetch(`${bin.url}${path}`, { headers: { authorization: `Bearer ${bound}`, ...headers } })

  for (const path of ['/orders/1', '/strict/1']) {
    const before = up.seen.length
    const ok = await get(path, { 'x-client-cert': escapedPem(svc) })
    t.equal(ok.status, 200, `${path}: the header's certificate matches`)
    t.equal(up.seen.length, before + 1)
    t.equal(up.seen.at(-1)?.headers['x-client-cert'], undefined, `${path}: the header is stripped`)
    t.equal(up.seen.at(-1)?.headers.x_client_cert, undefined, `${path}: and its underscore spelling`)
  }
  const before = up.seen.length
  for (const [label, headers] of [
    ['no header', {}],
    ['another certificate in the header', { 'x-client-cert': escapedPem(other) }],
    ['a header that is no certificate', { 'x-client-cert': 'not-a-certificate' }],
  ] as const) {
    const refused = await get('/orders/1', headers)
    t.equal(refused.status, 401, label)
    t.match(refused.headers.get('www-authenticate') ?? '', /error="invalid_token"/, label)
  }
  t.equal(up.seen.length, before, 'nothing reached the upstream')
})
