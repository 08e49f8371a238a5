import t from 'tap'
import { connect } from 'node:net'
import { once } from 'node:events'
import type { IncomingHttpHeaders } from 'node:http'
import { alice, gatewayConfig, rawNames, routeConfig, send, startProxy, startUpstream, type Listening } from './proxy-helpers.js'

/** An upstream that records the raw headers of each request and answers 200. */
async function headerUpstream(): Promise<Listening & { seen: { raw: string[]; headers: IncomingHttpHeaders }[] }> {
  const seen: { raw: string[]; headers: IncomingHttpHeaders }[] = []
  const up = await startUpstream((req, res) => {
    seen.push({ raw: req.rawHeaders, headers: req.headers })
    req.resume()
    req.on('end', () => res.end('ok'))
  })
  return { ...up, seen }
}

/** Values of one header (case-insensitive) in a raw header list. */
function valuesOf(raw: readonly string[], name: string): string[] {
  const out: string[] = []
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.toLowerCase() === name) out.push(raw[i + 1] ?? '')
  return out
}

/** Send a request byte for byte, so header names keep underscores and case. */
async function rawRequest(port: number, lines: string[]): Promise<string> {
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.setEncoding('utf8')
  let text = ''
  socket.on('data', (c: string) => (text += c))
  socket.write([...lines, 'Connection: close', '', ''].join('\r\n'))
  await once(socket, 'end')
  return text
}

t.test('identity headers are set from the token, and every client-sent variant is removed', async (t) => {
  const up = await headerUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url })])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })

  const reply = await rawRequest(gw.port, [
    'GET /orders HTTP/1.1',
    'Host: api.example.com',
    'X-Auth-Subject: mallory',
    'X_Auth_Subject: mallory-underscore',
    'x-auth_subject: mallory-mixed',
    'X-AUTH-CLIENT-ID: evil-client',
    'X_Auth_Scope: admin',
    'x-auth-issuer: https://evil.example',
  ])
  t.match(reply, /^HTTP\/1\.1 200/)
  const raw = up.seen[0]?.raw ?? []
  const names = rawNames(raw)
  t.notOk(
    names.some((n) => n.includes('_')),
    'no underscore variant reaches the upstream',
  )
  t.same(valuesOf(raw, 'x-auth-subject'), ['alice'])
  t.same(valuesOf(raw, 'x-auth-client-id'), ['web'])
  t.same(valuesOf(raw, 'x-auth-scope'), ['orders:read orders:write'], 'scope is space-separated')
  t.same(valuesOf(raw, 'x-auth-issuer'), ['http://gateway.test'])
  const ours = raw.filter((_, i) => i % 2 === 0 && /^x-auth-/i.test(raw[i] ?? ''))
  t.same(ours, ['x-auth-subject', 'x-auth-client-id', 'x-auth-scope', 'x-auth-issuer'], 'configured as X-Auth-*, written in lower case (docs/performance.md)')
})

t.test('on a public route client-sent identity headers are stripped and none are added', async (t) => {
  const up = await headerUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url, public: true })], undefined, () => ({ identity: null }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  await rawRequest(gw.port, ['GET /docs HTTP/1.1', 'Host: docs.example.com', 'X_Auth_Subject: mallory', 'X-Auth-Scope: admin'])
  const names = rawNames(up.seen[0]?.raw ?? [])
  for (const name of ['x-auth-subject', 'x_auth_subject', 'x-auth-scope', 'x-auth-client-id', 'x-auth-issuer']) {
    t.notOk(names.includes(name), `${name} absent`)
  }
})

t.test('a client_credentials token (no sub) sends no subject header', async (t) => {
  const up = await headerUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url })], undefined, () => ({ identity: { ...alice, sub: null, scopes: [] } }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  await send(gw.url, { headers: { 'x-auth-subject': 'mallory' } })
  const raw = up.seen[0]?.raw ?? []
  t.same(valuesOf(raw, 'x-auth-subject'), [])
  t.same(valuesOf(raw, 'x-auth-scope'), [])
  t.same(valuesOf(raw, 'x-auth-client-id'), ['web'])
})

t.test('a route with its own identity header names also strips the gateway defaults', async (t) => {
  const up = await headerUpstream()
  const route = routeConfig({
    upstream: up.url,
    identityHeaders: { subject: 'X-User', clientId: 'X-Client', scope: 'X-Scopes', issuer: 'X-Iss', claims: {} },
  })
  const gw = await startProxy([route])
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  await rawRequest(gw.port, ['GET / HTTP/1.1', 'Host: h', 'X-User: mallory', 'X_User: mallory2', 'X-Auth-Subject: mallory3'])
  const raw = up.seen[0]?.raw ?? []
  t.same(valuesOf(raw, 'x-user'), ['alice'])
  t.same(valuesOf(raw, 'x_user'), [])
  t.same(valuesOf(raw, 'x-auth-subject'), [], 'the default name cannot be spoofed either')
  t.same(valuesOf(raw, 'x-scopes'), ['orders:read orders:write'])
})

t.test('X-Forwarded-* and Forwarded from an untrusted peer are replaced with ours', async (t) => {
  const up = await headerUpstream()
  const gw = await startProxy([routeConfig({ upstream: up.url })], gatewayConfig({ trustedProxies: ['10.0.0.0/8'] }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  await rawRequest(gw.port, [
    'GET / HTTP/1.1',
    'Host: api.example.com',
    'X-Forwarded-For: 6.6.6.6',
    'X_Forwarded_For: 7.7.7.7',
    'X-Forwarded-Proto: https',
    'X-Forwarded-Host: evil.example',
    'X-Forwarded-Port: 443',
    'Forwarded: for=6.6.6.6;proto=https',
  ])
  const raw = up.seen[0]?.raw ?? []
  t.same(valuesOf(raw, 'x-forwarded-for'), ['127.0.0.1'])
  t.same(valuesOf(raw, 'x_forwarded_for'), [])
  t.same(valuesOf(raw, 'x-forwarded-proto'), ['http'])
  t.same(valuesOf(raw, 'x-forwarded-host'), ['api.example.com'])
  t.same(valuesOf(raw, 'x-forwarded-port'), [], 'other X-Forwarded-* from an untrusted peer are dropped')
  t.same(valuesOf(raw, 'forwarded'), [], 'an untrusted Forwarded is dropped; X-Forwarded-* carries ours')
})

t.test('a trusted proxy chain is kept and extended', async (t) => {
  const up = await headerUpstream()
  for (const trusted of [['127.0.0.1'], ['127.0.0.0/8'], ['::ffff:127.0.0.1']]) {
    const gw = await startProxy([routeConfig({ upstream: up.url })], gatewayConfig({ trustedProxies: trusted }))
    await rawRequest(gw.port, [
      'GET / HTTP/1.1',
      'Host: internal:8080',
      'X-Forwarded-For: 203.0.113.9',
      'X-Forwarded-For: 10.1.1.1',
      'X-Forwarded-Proto: https',
      'X-Forwarded-Host: api.example.com',
      'X-Forwarded-Port: 443',
      'Forwarded: for=203.0.113.9;proto=https;host=api.example.com',
    ])
    await gw.close()
    const raw = up.seen.at(-1)?.raw ?? []
    const label = trusted.join(',')
    t.same(valuesOf(raw, 'x-forwarded-for'), ['203.0.113.9, 10.1.1.1, 127.0.0.1'], `${label}: X-Forwarded-For appended`)
    t.same(valuesOf(raw, 'x-forwarded-proto'), ['https'], `${label}: the original scheme is kept`)
    t.same(valuesOf(raw, 'x-forwarded-host'), ['api.example.com'], `${label}: the original host is kept`)
    t.same(valuesOf(raw, 'x-forwarded-port'), ['443'], `${label}: other X-Forwarded-* kept`)
    t.same(
      valuesOf(raw, 'forwarded'),
      ['for=203.0.113.9;proto=https;host=api.example.com, for=127.0.0.1;host="internal:8080";proto=http'],
      `${label}: Forwarded appended`,
    )
  }
  await up.close()
})

t.test('identity_headers.claims: the token claim goes upstream; client copies never do', async (t) => {
  const up = await headerUpstream()
  const claims = { email: 'X-Auth-Email', groups: 'X-Auth-Groups', level: 'X-Auth-Level', profile: 'X-Auth-Profile', bad: 'X-Auth-Bad', empty: 'X-Auth-Empty' }
  const withClaims = routeConfig({
    upstream: up.url,
    identityHeaders: { subject: 'X-Auth-Subject', clientId: 'X-Auth-Client-Id', scope: 'X-Auth-Scope', issuer: 'X-Auth-Issuer', claims },
  })
  const identity = (c: Record<string, unknown>): typeof alice => ({ ...alice, claims: c })
  let next = identity({})
  const gw = await startProxy([withClaims], gatewayConfig(), () => ({ identity: next }))
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  const sent = async (c: Record<string, unknown>, lines: string[] = []): Promise<string[]> => {
    next = identity(c)
    up.seen.length = 0
    await rawRequest(gw.port, ['GET / HTTP/1.1', 'Host: h', ...lines])
    return up.seen[0]?.raw ?? []
  }

  let raw = await sent({ email: 'alice@example.com', groups: ['admins', 'ops'], level: 3, profile: { team: 'x' } })
  t.same(valuesOf(raw, 'x-auth-email'), ['alice@example.com'])
  t.same(valuesOf(raw, 'x-auth-groups'), ['admins, ops'], 'a list is joined with ", "')
  t.same(valuesOf(raw, 'x-auth-level'), ['3'], 'a number as text')
  t.same(valuesOf(raw, 'x-auth-profile'), [], 'an object is not sent')

  raw = await sent({}, ['X-Auth-Email: mallory@evil.example', 'x-auth-groups: admins', 'X_Auth_Email: mallory2'])
  t.same(valuesOf(raw, 'x-auth-email'), [], "the token has no email: the client's copy is stripped, not passed on")
  t.same(valuesOf(raw, 'x-auth-groups'), [])
  t.same(valuesOf(raw, 'x_auth_email'), [], 'the underscore spelling too')

  raw = await sent({ email: 'alice@example.com' }, ['X-Auth-Email: mallory@evil.example'])
  t.same(valuesOf(raw, 'x-auth-email'), ['alice@example.com'], "only the token's value, once")

  raw = await sent({ bad: 'a\r\nX-Injected: 1', email: 'caf\u00e9@example.com', groups: ['ok', 'no\nway'], empty: '' })
  t.same(valuesOf(raw, 'x-auth-bad'), [], 'CR LF in a claim: no header at all')
  t.same(valuesOf(raw, 'x-injected'), [], 'and no header line added')
  t.same(valuesOf(raw, 'x-auth-email'), [], 'a value outside printable ASCII is not sent')
  t.same(valuesOf(raw, 'x-auth-groups'), [], 'a list with one bad item is not sent at all')
  t.same(valuesOf(raw, 'x-auth-empty'), [], 'an empty value is not sent')
  t.same(valuesOf(raw, 'x-auth-subject'), ['alice'], 'the other identity headers are untouched')
})

t.test('a route without claim headers strips the gateway-wide claim headers', async (t) => {
  const up = await headerUpstream()
  const gw = await startProxy(
    [routeConfig({ upstream: up.url })],
    gatewayConfig({
      identityHeaders: {
        subject: 'X-Auth-Subject',
        clientId: 'X-Auth-Client-Id',
        scope: 'X-Auth-Scope',
        issuer: 'X-Auth-Issuer',
        claims: { email: 'X-Auth-Email' },
      },
    }),
  )
  t.teardown(async () => {
    await gw.close()
    await up.close()
  })
  await rawRequest(gw.port, ['GET / HTTP/1.1', 'Host: h', 'X-Auth-Email: mallory@evil.example'])
  t.same(valuesOf(up.seen[0]?.raw ?? [], 'x-auth-email'), [])
})
