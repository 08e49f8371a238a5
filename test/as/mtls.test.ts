/**
 * Mutual TLS at the authorization server (RFC 8705) over a real TLS
 * listener that asks for client certificates (`tls.client_ca`): clients
 * authenticated by a CA-issued certificate (`tls_client_auth`, by subject DN
 * or SAN) or a self-signed one (`self_signed_tls_client_auth`), tokens bound
 * to the certificate (`cnf.x5t#S256`), a public client's refresh family
 * bound to it, introspection and UserInfo aware of the binding; oauth4webapi
 * drives the token and introspection requests as its users do, with an
 * undici Agent holding the client certificate. The attacker's side: a
 * certificate from another CA carrying the registered subject and SAN, a
 * self-signed certificate whose key is not the client's, a bound refresh
 * token used without the certificate or with another, `required` refusing
 * the handshake, and a proxy's certificate header sent by a peer that is not
 * a trusted proxy.
 */
import { createPublicKey, X509Certificate } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { connect as http2Connect } from 'node:http2'
import { connect } from 'node:tls'
import t from 'tap'
import { decodeJwt } from 'jose'
import * as oauth from 'oauth4webapi'
import { Agent, fetch as undiciFetch } from 'undici'
import { certificateThumbprint } from '../../src/http/client-certificate.js'
import { hashToken } from '../../src/store/hash.js'
import { codeParams, mintCode, startAs, type Harness } from '../helpers/as-back.js'
import { certificateAuthority, clientCertificate, type IssuedCertificate, selfSignedCert } from '../helpers/tls.js'

interface Keys {
  dir: string
  server: { certFile: string; keyFile: string; cert: string }
  ca: IssuedCertificate
  /** CA-issued: subject CN=svc,O=Example, SAN dNSName svc.example.com. */
  svc: IssuedCertificate
  /** Another CA's certificate with the same subject and SAN. */
  forged: IssuedCertificate
  /** Self-signed; its key is in the `selfie` client's jwks. */
  self: IssuedCertificate
  /** Self-signed with another key and the same subject. */
  selfOther: IssuedCertificate
  /** CA-issued, for the public client's binding; and a second one of the same client. */
  pub: IssuedCertificate
  pub2: IssuedCertificate
}

async function makeKeys(): Promise<Keys> {
  const dir = await mkdtemp(join(tmpdir(), 'bw-mtls-'))
  const ca = certificateAuthority(dir, 'ca')
  const rogue = certificateAuthority(dir, 'rogue')
  const names = { subject: '/O=Example/CN=svc', san: ['DNS:svc.example.com', 'URI:spiffe://example.com/svc', 'IP:10.0.0.7', 'email:svc@example.com'] }
  return {
    dir,
    server: selfSignedCert(dir, 'server'),
    ca,
    svc: clientCertificate(dir, 'svc', names, ca),
    forged: clientCertificate(dir, 'forged', names, rogue),
    self: clientCertificate(dir, 'self', { subject: '/CN=selfie' }, null),
    selfOther: clientCertificate(dir, 'self-other', { subject: '/CN=selfie' }, null),
    pub: clientCertificate(dir, 'pub', { subject: '/CN=phone' }, ca),
    pub2: clientCertificate(dir, 'pub2', { subject: '/CN=phone' }, ca),
  }
}

function thumbprintOf(cert: IssuedCertificate): string {
  return certificateThumbprint(new X509Certificate(cert.cert).raw)
}

const CLIENTS = (k: Keys): string => {
  const jwk = createPublicKey(k.self.cert).export({ format: 'jwk' })
  return `    - client_id: mtls-svc
      type: confidential
      token_endpoint_auth_method: tls_client_auth
      tls_client_auth_subject_dn: "cn=svc, o=example"
      grant_types: [client_credentials]
      scopes: [orders:read]
      tls_client_certificate_bound_access_tokens: true
    - client_id: mtls-san
      type: confidential
      token_endpoint_auth_method: tls_client_auth
      tls_client_auth_san_dns: SVC.example.com
      grant_types: [client_credentials]
      scopes: [orders:read]
      introspect: true
    - client_id: mtls-uri
      type: confidential
      token_endpoint_auth_method: tls_client_auth
      tls_client_auth_san_uri: spiffe://example.com/svc
      grant_types: [client_credentials]
      scopes: [orders:read]
    - client_id: mtls-ip
      type: confidential
      token_endpoint_auth_method: tls_client_auth
      tls_client_auth_san_ip: 10.0.0.7
      grant_types: [client_credentials]
      scopes: [orders:read]
    - client_id: mtls-email
      type: confidential
      token_endpoint_auth_method: tls_client_auth
      tls_client_auth_san_email: svc@example.com
      grant_types: [client_credentials]
      scopes: [orders:read]
    - client_id: mtls-wrong-dn
      type: confidential
      token_endpoint_auth_method: tls_client_auth
      tls_client_auth_subject_dn: "CN=svc,O=Other"
      grant_types: [client_credentials]
      scopes: [orders:read]
    - client_id: selfie
      type: confidential
      token_endpoint_auth_method: self_signed_tls_client_auth
      jwks: { keys: [${JSON.stringify(jwk)}] }
      grant_types: [client_credentials]
      scopes: [orders:read]
    - client_id: mtls-locked
      type: confidential
      token_endpoint_auth_method: tls_client_auth
      tls_client_auth_san_dns: svc.example.com
      grant_types: [client_credentials]
      scopes: [orders:read]
    - client_id: mtls-tv
      type: confidential
      token_endpoint_auth_method: tls_client_auth
      tls_client_auth_san_dns: svc.example.com
      grant_types: ["urn:ietf:params:oauth:grant-type:device_code"]
      scopes: [orders:read]
    - client_id: mtls-pub
      type: public
      redirect_uris: [https://phone.example.com/cb]
      grant_types: [authorization_code, refresh_token]
      scopes: [openid, profile, orders:read]
      tls_client_certificate_bound_access_tokens: true`
}

function tlsTop(k: Keys, mode: 'optional' | 'required' = 'optional'): string {
  return `tls: { cert_file: ${k.server.certFile}, key_file: ${k.server.keyFile}, client_ca: ${k.ca.certFile}, client_certificates: ${mode} }
http2: { tls: true }`
}

/** An undici Agent that trusts our server and presents `cert` (or none). */
function agentFor(k: Keys, cert: IssuedCertificate | null): Agent {
  return new Agent({ connect: { ca: k.server.cert, ...(cert === null ? {} : { cert: cert.cert, key: cert.key }) } })
}

/** oauth4webapi's options that send its requests through `agent` (its `customFetch`, as its documentation shows for mTLS). */
function through(agent: Agent): { [oauth.customFetch]: typeof fetch } {
  return {
    [oauth.customFetch]: ((url: string, init: RequestInit) => undiciFetch(url, { ...(init as object), dispatcher: agent })) as unknown as typeof fetch,
  }
}

interface Answer {
  status: number
  json: Record<string, unknown>
}

async function post(h: Harness, agent: Agent, path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await undiciFetch(`${h.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form).toString(),
    dispatcher: agent,
  })
  const text = await res.text()
  return { status: res.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) }
}

/** POST a form over plain HTTP from `localAddress` (undici's Agent does not bind a local address). */
function postFrom(localAddress: string, url: string, form: Record<string, string>, headers: Record<string, string | string[]>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = new URLSearchParams(form).toString()
    const req = httpRequest(url, { method: 'POST', localAddress, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } }, (res) => {
      let text = ''
      res.on('data', (d: Buffer) => (text += d.toString()))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) }))
    })
    req.on('error', reject)
    req.end(body)
  })
}

t.test('mutual TLS at the authorization server (client_certificates: optional)', async (t) => {
  const k = await makeKeys()
  const h = await startAs({
    top: tlsTop(k),
    https: { alpn: true },
    clientsExtra: CLIENTS(k),
    asExtra: '  mtls_url: ${PUBLIC_URL}',
  })
  const agents = {
    svc: agentFor(k, k.svc),
    forged: agentFor(k, k.forged),
    none: agentFor(k, null),
    self: agentFor(k, k.self),
    selfOther: agentFor(k, k.selfOther),
    pub: agentFor(k, k.pub),
    pub2: agentFor(k, k.pub2),
  }
  t.teardown(async () => {
    await Promise.all(Object.values(agents).map((a) => a.close()))
    await h.close()
    await rm(k.dir, { recursive: true, force: true })
  })
  const discovered = await oauth.processDiscoveryResponse(
    new URL(h.issuer),
    await oauth.discoveryRequest(new URL(h.issuer), { algorithm: 'oauth2', ...through(agents.none) }),
  )

  t.test('metadata: the certificate methods, bound tokens and the mTLS aliases (RFC 8705 3.3, 5)', async (t) => {
    t.ok((discovered.token_endpoint_auth_methods_supported as string[]).includes('tls_client_auth'))
    t.ok((discovered.token_endpoint_auth_methods_supported as string[]).includes('self_signed_tls_client_auth'))
    t.ok((discovered.introspection_endpoint_auth_methods_supported as string[]).includes('tls_client_auth'))
    t.equal(discovered.tls_client_certificate_bound_access_tokens, true)
    t.same(discovered.mtls_endpoint_aliases, {
      token_endpoint: `${h.issuer}/token`,
      revocation_endpoint: `${h.issuer}/revoke`,
      introspection_endpoint: `${h.issuer}/introspect`,
      device_authorization_endpoint: `${h.issuer}/device_authorization`,
      backchannel_authentication_endpoint: `${h.issuer}/bc-authorize`,
      userinfo_endpoint: `${h.issuer}/userinfo`,
    })
  })

  t.test('oauth4webapi: tls_client_auth by subject DN gets a token bound to its certificate; introspection shows cnf', async (t) => {
    const client: oauth.Client = { client_id: 'mtls-svc', use_mtls_endpoint_aliases: true }
    const res = await oauth.clientCredentialsGrantRequest(discovered, client, oauth.TlsClientAuth(), { scope: 'orders:read' }, through(agents.svc))
    const tokens = await oauth.processClientCredentialsResponse(discovered, client, res)
    t.equal(tokens.token_type, 'bearer', 'a certificate-bound token is still a Bearer token (RFC 8705 3)')
    t.same(decodeJwt(tokens.access_token).cnf, { 'x5t#S256': thumbprintOf(k.svc) })

    // mtls-san introspects, authenticated by the SAN of the same certificate.
    const looker: oauth.Client = { client_id: 'mtls-san', use_mtls_endpoint_aliases: true }
    const seen = await oauth.processIntrospectionResponse(
      discovered,
      looker,
      await oauth.introspectionRequest(discovered, looker, oauth.TlsClientAuth(), tokens.access_token, through(agents.svc)),
    )
    t.equal(seen.active, true)
    t.same(seen.cnf, { 'x5t#S256': thumbprintOf(k.svc) }, 'introspection returns the binding (RFC 8705 3.2)')
    t.equal(seen.token_type, 'Bearer')
  })

  t.test('tls_client_auth by each kind of SAN', async (t) => {
    for (const clientId of ['mtls-san', 'mtls-uri', 'mtls-ip', 'mtls-email']) {
      const r = await post(h, agents.svc, '/token', { grant_type: 'client_credentials', client_id: clientId })
      t.equal(r.status, 200, `${clientId}: ${JSON.stringify(r.json)}`)
      t.notOk('cnf' in decodeJwt(String(r.json.access_token)), `${clientId} did not ask for bound tokens`)
    }
  })

  t.test('HTTP/2: the certificate of the connection authenticates the client too', async (t) => {
    // node:http2's client: the request is HTTP/2 for certain (ALPN h2), on one connection for both streams.
    const session = http2Connect(h.url, { ca: k.server.cert, cert: k.svc.cert, key: k.svc.key })
    t.teardown(() => session.close())
    const stream = (): Promise<{ status: number; body: Record<string, unknown> }> =>
      new Promise((resolve, reject) => {
        const req = session.request({ ':method': 'POST', ':path': '/token', 'content-type': 'application/x-www-form-urlencoded' })
        let status = 0
        let text = ''
        req.on('response', (headers) => (status = Number(headers[':status'])))
        req.on('data', (d: Buffer) => (text += d.toString()))
        req.on('end', () => resolve({ status, body: JSON.parse(text) as Record<string, unknown> }))
        req.on('error', reject)
        req.end('grant_type=client_credentials&client_id=mtls-svc')
      })
    for (const r of [await stream(), await stream()]) {
      t.equal(r.status, 200, JSON.stringify(r.body))
      t.same(decodeJwt(String(r.body.access_token)).cnf, { 'x5t#S256': thumbprintOf(k.svc) })
    }
    t.equal(session.alpnProtocol, 'h2')
  })

  t.test('a certificate from another CA carrying the registered subject and SAN is refused', async (t) => {
    for (const clientId of ['mtls-svc', 'mtls-san', 'mtls-uri']) {
      const r = await post(h, agents.forged, '/token', { grant_type: 'client_credentials', client_id: clientId })
      t.equal(r.status, 401, clientId)
      t.equal(r.json.error, 'invalid_client')
    }
    t.ok(
      h.logs.some((l) => String(l.cause ?? l.reason ?? '').includes('without a verified client certificate')),
      'the log says the certificate was not verified',
    )
  })

  t.test('tls_client_auth without a certificate, or with the wrong subject, is refused', async (t) => {
    const none = await post(h, agents.none, '/token', { grant_type: 'client_credentials', client_id: 'mtls-svc' })
    t.equal(none.status, 401)
    t.equal(none.json.error, 'invalid_client')
    const wrongDn = await post(h, agents.svc, '/token', { grant_type: 'client_credentials', client_id: 'mtls-wrong-dn' })
    t.equal(wrongDn.status, 401)
    t.equal(wrongDn.json.error, 'invalid_client')
    const introspectNone = await post(h, agents.none, '/introspect', { token: 'x', client_id: 'mtls-san' })
    t.equal(introspectNone.status, 401, 'introspection refuses it too')
  })

  t.test('self_signed_tls_client_auth: the key in jwks authenticates; another self-signed key does not', async (t) => {
    const ok = await post(h, agents.self, '/token', { grant_type: 'client_credentials', client_id: 'selfie' })
    t.equal(ok.status, 200, JSON.stringify(ok.json))
    const other = await post(h, agents.selfOther, '/token', { grant_type: 'client_credentials', client_id: 'selfie' })
    t.equal(other.status, 401)
    t.equal(other.json.error, 'invalid_client')
    const none = await post(h, agents.none, '/token', { grant_type: 'client_credentials', client_id: 'selfie' })
    t.equal(none.status, 401)
  })

  t.test('optional mode: a certificate client_ca does not vouch for is treated as none for tls_client_auth', async (t) => {
    // The self-signed certificate completes the handshake (optional), yet is not verified.
    const r = await post(h, agents.self, '/token', { grant_type: 'client_credentials', client_id: 'mtls-san' })
    t.equal(r.status, 401)
    t.equal(r.json.error, 'invalid_client')
  })

  t.test("a public client's tokens and refresh family are bound to its certificate", async (t) => {
    const noCert = await post(h, agents.none, '/token', { ...codeParams(await mintCode(h, { clientId: 'mtls-pub' })), client_id: 'mtls-pub' })
    t.equal(noCert.status, 400, 'a client registered for bound tokens gets nothing without a certificate')
    t.equal(noCert.json.error, 'invalid_request')

    const m = await mintCode(h, { clientId: 'mtls-pub', scope: 'openid orders:read' })
    const r = await post(h, agents.pub, '/token', { ...codeParams(m), client_id: 'mtls-pub' })
    t.equal(r.status, 200, JSON.stringify(r.json))
    t.same(decodeJwt(String(r.json.access_token)).cnf, { 'x5t#S256': thumbprintOf(k.pub) })
    const rt = String(r.json.refresh_token)

    const without = await post(h, agents.none, '/token', { grant_type: 'refresh_token', refresh_token: rt, client_id: 'mtls-pub' })
    t.equal(without.status, 400, 'a client registered for bound tokens needs a certificate at all')
    const another = await post(h, agents.pub2, '/token', { grant_type: 'refresh_token', refresh_token: rt, client_id: 'mtls-pub' })
    t.equal(another.status, 400)
    t.equal(another.json.error, 'invalid_grant', 'another certificate of the same CA and subject does not refresh it')
    t.equal((await h.store.grants.findRefresh(hashToken(rt)))?.grant.x5t, thumbprintOf(k.pub), 'the family records the certificate')
    t.equal((await h.store.grants.findRefresh(hashToken(rt)))?.current, true, 'the refusals did not rotate or revoke the family')

    const ok = await post(h, agents.pub, '/token', { grant_type: 'refresh_token', refresh_token: rt, client_id: 'mtls-pub' })
    t.equal(ok.status, 200, JSON.stringify(ok.json))
    t.same(decodeJwt(String(ok.json.access_token)).cnf, { 'x5t#S256': thumbprintOf(k.pub) })

    // UserInfo is a resource: the bound token needs its certificate there too.
    const at = String(ok.json.access_token)
    const userinfo = (agent: Agent): Promise<number> =>
      undiciFetch(`${h.url}/userinfo`, { headers: { authorization: `Bearer ${at}` }, dispatcher: agent }).then(async (res) => {
        await res.arrayBuffer()
        return res.status
      })
    t.equal(await userinfo(agents.pub), 200)
    t.equal(await userinfo(agents.none), 401, 'without the certificate')
    t.equal(await userinfo(agents.pub2), 401, 'with another certificate')
  })

  t.test('/revoke and /device_authorization authenticate by certificate too', async (t) => {
    const issued = await post(h, agents.svc, '/token', { grant_type: 'client_credentials', client_id: 'mtls-svc' })
    const at = String(issued.json.access_token)
    t.equal((await post(h, agents.forged, '/revoke', { token: at, client_id: 'mtls-svc' })).status, 401, 'another CA: refused')
    t.equal((await post(h, agents.svc, '/revoke', { token: at, client_id: 'mtls-svc' })).status, 200)
    const seen = await post(h, agents.svc, '/introspect', { token: at, client_id: 'mtls-san' })
    t.same(seen.json, { active: false }, 'revoked')
    const device = await post(h, agents.svc, '/device_authorization', { client_id: 'mtls-tv', scope: 'orders:read' })
    t.equal(device.status, 200, JSON.stringify(device.json))
    t.type(device.json.device_code, 'string')
    t.equal((await post(h, agents.none, '/device_authorization', { client_id: 'mtls-tv', scope: 'orders:read' })).status, 401)
  })

  t.test('refused certificates count as wrong secrets: the address is locked out, the right certificate too', async (t) => {
    // client_auth_max_failures is 5 in the standard config.
    for (let i = 0; i < 5; i++) {
      const r = await post(h, agents.forged, '/token', { grant_type: 'client_credentials', client_id: 'mtls-locked' })
      t.equal(r.status, 401)
    }
    const locked = await post(h, agents.svc, '/token', { grant_type: 'client_credentials', client_id: 'mtls-locked' })
    t.equal(locked.status, 429)
    t.equal(locked.json.error, 'invalid_client')
  })

  t.test('a TLS 1.2 client cannot renegotiate to present another certificate on the same connection', async (t) => {
    const u = new URL(h.url)
    const s = connect({ host: u.hostname, port: Number(u.port), ca: k.server.cert, cert: k.pub.cert, key: k.pub.key, maxVersion: 'TLSv1.2' })
    t.teardown(() => s.destroy())
    await new Promise<void>((resolve, reject) => {
      s.once('secureConnect', resolve)
      s.once('error', reject)
    })
    const outcome = await new Promise<string>((resolve) => {
      s.once('error', (err: Error) => resolve(`error: ${err.message}`))
      s.once('close', () => resolve('closed'))
      s.renegotiate({ rejectUnauthorized: false }, (err) => resolve(err === null ? 'renegotiated' : `refused: ${err.message}`))
      // The renegotiation runs when records flow.
      s.write(`GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: ${u.host}\r\n\r\n`)
    })
    t.not(outcome, 'renegotiated', outcome)
  })

  t.test('a certificate-bound token at a gateway route is judged by the certificate of its connection', async (t) => {
    // The harness's routes lead to a closed port: a token the gateway accepts is forwarded and answered 502.
    // test/e2e/certificate-bound-routes.test.ts has routes that serve.
    const r = await post(h, agents.svc, '/token', { grant_type: 'client_credentials', client_id: 'mtls-svc' })
    const at = String(r.json.access_token)
    const answer = async (agent: Agent): Promise<{ status: number; challenge: string }> => {
      const res = await undiciFetch(`${h.url}/orders`, { headers: { authorization: `Bearer ${at}` }, dispatcher: agent })
      await res.arrayBuffer()
      return { status: res.status, challenge: res.headers.get('www-authenticate') ?? '' }
    }
    t.equal((await answer(agents.svc)).status, 502, 'its certificate: accepted and forwarded')
    for (const [label, agent] of [
      ['no certificate', agents.none],
      ['a self-signed one', agents.self],
      ['another CA’s with the same names', agents.forged],
    ] as const) {
      const refused = await answer(agent)
      t.equal(refused.status, 401, label)
      t.match(refused.challenge, /invalid_token/, label)
    }
  })

  t.test('a bound client that also sends a DPoP proof is refused: one token, one binding', async (t) => {
    const r = await post(h, agents.svc, '/token', { grant_type: 'client_credentials', client_id: 'mtls-svc' }, { dpop: 'x.y.z' })
    t.equal(r.status, 400)
    t.equal(r.json.error, 'invalid_request')
  })
})

/** Whether a TLS handshake with `cert` (or none) completes and the server answers over it. */
function handshake(url: string, k: Keys, cert: IssuedCertificate | null): Promise<boolean> {
  const u = new URL(url)
  return new Promise((resolve) => {
    const s = connect(
      { host: u.hostname, port: Number(u.port), ca: k.server.cert, ...(cert === null ? {} : { cert: cert.cert, key: cert.key }), ALPNProtocols: ['http/1.1'] },
      () => s.write(`GET /.well-known/oauth-authorization-server HTTP/1.1\r\nHost: ${u.host}\r\nConnection: close\r\n\r\n`),
    )
    let text = ''
    s.on('data', (d: Buffer) => (text += d.toString('latin1')))
    s.on('error', () => resolve(false))
    s.on('close', () => resolve(text.startsWith('HTTP/1.1 200')))
  })
}

t.test('client_certificates: required refuses the handshake without a certificate client_ca vouches for', async (t) => {
  const k = await makeKeys()
  const h = await startAs({ top: tlsTop(k, 'required'), https: {}, clientsExtra: CLIENTS(k) })
  t.teardown(async () => {
    await h.close()
    await rm(k.dir, { recursive: true, force: true })
  })
  t.equal(await handshake(h.url, k, k.svc), true, 'a certificate of client_ca')
  t.equal(await handshake(h.url, k, null), false, 'no certificate')
  t.equal(await handshake(h.url, k, k.forged), false, 'a certificate of another CA')
  t.equal(await handshake(h.url, k, k.self), false, 'a self-signed certificate')
})

t.test('behind a TLS-terminating proxy: the certificate header, from trusted proxies only', async (t) => {
  const k = await makeKeys()
  const h = await startAs({ gatewayExtra: '  client_certificate_header: X-Client-Cert', clientsExtra: CLIENTS(k) })
  // 127.0.0.1 is the trusted proxy (backYaml); 127.0.0.2 is anyone else on the network.
  const proxy = new Agent()
  t.teardown(async () => {
    await proxy.close()
    await h.close()
    await rm(k.dir, { recursive: true, force: true })
  })
  const escaped = encodeURIComponent(k.svc.cert)
  const xfcc = `Hash=abc;Cert="${escaped}";Subject="CN=svc,O=Example";DNS=svc.example.com`

  t.test('a URL-encoded PEM (nginx $ssl_client_escaped_cert) from the proxy authenticates and binds', async (t) => {
    const r = await post(h, proxy, '/token', { grant_type: 'client_credentials', client_id: 'mtls-svc' }, { 'x-client-cert': escaped })
    t.equal(r.status, 200, JSON.stringify(r.json))
    t.same(decodeJwt(String(r.json.access_token)).cnf, { 'x5t#S256': thumbprintOf(k.svc) })
  })

  t.test("Envoy's XFCC with one element from the proxy authenticates", async (t) => {
    const r = await post(h, proxy, '/token', { grant_type: 'client_credentials', client_id: 'mtls-svc' }, { 'x-client-cert': xfcc })
    t.equal(r.status, 200, JSON.stringify(r.json))
  })

  t.test('an XFCC with two elements (a header the proxy appended to) is not believed', async (t) => {
    const r = await post(h, proxy, '/token', { grant_type: 'client_credentials', client_id: 'mtls-svc' }, { 'x-client-cert': `${xfcc},By=x;Hash=y` })
    t.equal(r.status, 401)
  })

  t.test('two copies of the certificate header (a proxy that adds its own after the client’s) are not believed', async (t) => {
    // HAProxy's `http-request add-header` (not set-header) appends its line after the client's copy; Node
    // joins the two lines into one value ("client's, proxy's"), whose first certificate used to win.
    // Its own client: refused certificates count towards the lockout of (client, address).
    const form = { grant_type: 'client_credentials', client_id: 'mtls-uri' }
    const one = await postFrom('127.0.0.1', `${h.url}/token`, form, { 'x-client-cert': escaped })
    t.equal(one.status, 200, 'the one copy passes')
    const proxysOwn = new X509Certificate(k.pub.cert).raw.toString('base64')
    for (const copies of [
      [escaped, proxysOwn],
      [escaped, escaped],
      [k.svc.cert.replace(/\n/g, ' '), proxysOwn],
    ]) {
      const r = await postFrom('127.0.0.1', `${h.url}/token`, form, { 'x-client-cert': copies })
      t.equal(r.status, 401, JSON.stringify(r.json))
      t.equal(r.json.error, 'invalid_client')
      t.equal(r.json.access_token, undefined, 'no token issued')
    }
    const joined = await postFrom('127.0.0.1', `${h.url}/token`, form, { 'x-client-cert': `${escaped}, ${proxysOwn}` })
    t.equal(joined.status, 401, 'one line holding a certificate and more is not one certificate either')
  })

  t.test('the certificate header from a peer that is not a trusted proxy is ignored', async (t) => {
    const control = await postFrom('127.0.0.1', `${h.url}/token`, { grant_type: 'client_credentials', client_id: 'mtls-svc' }, { 'x-client-cert': escaped })
    t.equal(control.status, 200, 'the same request from the proxy passes')
    for (const value of [escaped, xfcc]) {
      const r = await postFrom('127.0.0.2', `${h.url}/token`, { grant_type: 'client_credentials', client_id: 'mtls-svc' }, { 'x-client-cert': value })
      t.equal(r.status, 401)
      t.equal(r.json.error, 'invalid_client')
    }
  })
})

/** POST a form over TLS from `localAddress`, presenting `cert`. */
function postTls(
  localAddress: string,
  url: string,
  k: Keys,
  cert: IssuedCertificate,
  form: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = new URLSearchParams(form).toString()
    const req = httpsRequest(
      url,
      {
        method: 'POST',
        localAddress,
        ca: k.server.cert,
        cert: cert.cert,
        key: cert.key,
        agent: false,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      },
      (res) => {
        let text = ''
        res.on('data', (d: Buffer) => (text += d.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) }))
      },
    )
    req.on('error', reject)
    req.end(body)
  })
}

t.test("a trusted proxy's own TLS certificate never speaks for its clients", async (t) => {
  // A mesh proxy (127.0.0.1, trusted) re-encrypts to bearward with its own certificate: with a header
  // configured, only the header describes the client; the same certificate from anyone else is theirs.
  const k = await makeKeys()
  const h = await startAs({ top: tlsTop(k), https: {}, gatewayExtra: '  client_certificate_header: X-Client-Cert', clientsExtra: CLIENTS(k) })
  t.teardown(async () => {
    await h.close()
    await rm(k.dir, { recursive: true, force: true })
  })
  const form = { grant_type: 'client_credentials', client_id: 'mtls-svc' }
  const bare = await postTls('127.0.0.1', `${h.url}/token`, k, k.svc, form)
  t.equal(bare.status, 401, "the proxy's connection certificate does not authenticate a client")
  const told = await postTls('127.0.0.1', `${h.url}/token`, k, k.pub, form, { 'x-client-cert': encodeURIComponent(k.svc.cert) })
  t.equal(told.status, 200, JSON.stringify(told.json))
  t.same(
    decodeJwt(String(told.json.access_token)).cnf,
    { 'x5t#S256': thumbprintOf(k.svc) },
    'bound to the certificate the header reports, not the connection’s',
  )
  const direct = await postTls('127.0.0.2', `${h.url}/token`, k, k.svc, form, { 'x-client-cert': encodeURIComponent(k.pub.cert) })
  t.equal(direct.status, 200, 'a client connecting directly is judged by its own certificate; its header is ignored')
  t.same(decodeJwt(String(direct.json.access_token)).cnf, { 'x5t#S256': thumbprintOf(k.svc) })
})

t.test('opaque tokens: the binding lives in the store; oauth4webapi refreshes a bound family with its certificate only', async (t) => {
  const k = await makeKeys()
  const h = await startAs({ format: 'opaque', top: tlsTop(k), https: {}, clientsExtra: CLIENTS(k) })
  const agents = { pub: agentFor(k, k.pub), pub2: agentFor(k, k.pub2), svc: agentFor(k, k.svc) }
  t.teardown(async () => {
    await Promise.all(Object.values(agents).map((a) => a.close()))
    await h.close()
    await rm(k.dir, { recursive: true, force: true })
  })
  const discovered = await oauth.processDiscoveryResponse(
    new URL(h.issuer),
    await oauth.discoveryRequest(new URL(h.issuer), { algorithm: 'oauth2', ...through(agents.svc) }),
  )
  // No openid: oauth4webapi would judge an ID token's exp by the real clock, not the test's ManualClock.
  const m = await mintCode(h, { clientId: 'mtls-pub', scope: 'orders:read' })
  const first = await post(h, agents.pub, '/token', { ...codeParams(m), client_id: 'mtls-pub' })
  t.equal(first.status, 200, JSON.stringify(first.json))
  t.equal((await h.store.opaqueTokens.get(hashToken(String(first.json.access_token))))?.x5t, thumbprintOf(k.pub), 'the record keeps the thumbprint')

  const client: oauth.Client = { client_id: 'mtls-pub' }
  const refreshed = await oauth.processRefreshTokenResponse(
    discovered,
    client,
    await oauth.refreshTokenGrantRequest(discovered, client, oauth.None(), String(first.json.refresh_token), through(agents.pub)),
  )
  const looker: oauth.Client = { client_id: 'mtls-san' }
  const seen = await oauth.processIntrospectionResponse(
    discovered,
    looker,
    await oauth.introspectionRequest(discovered, looker, oauth.TlsClientAuth(), refreshed.access_token, through(agents.svc)),
  )
  t.same(seen.cnf, { 'x5t#S256': thumbprintOf(k.pub) }, 'introspection of an opaque token returns the binding')
  const family = await oauth.processIntrospectionResponse(
    discovered,
    looker,
    await oauth.introspectionRequest(discovered, looker, oauth.TlsClientAuth(), String(refreshed.refresh_token), through(agents.svc)),
  )
  t.same(family.cnf, { 'x5t#S256': thumbprintOf(k.pub) }, 'and of the refresh token')

  const stolen = oauth.refreshTokenGrantRequest(discovered, client, oauth.None(), String(refreshed.refresh_token), through(agents.pub2))
  const refusal = await stolen.then((res) => oauth.processRefreshTokenResponse(discovered, client, res)).catch((err: unknown) => err)
  t.type(refusal, oauth.ResponseBodyError)
  t.equal((refusal as oauth.ResponseBodyError).error, 'invalid_grant', 'another certificate: invalid_grant')
})
