import t from 'tap'
import { forwardedElement } from '../../src/gateway/forwarded.js'
import { TrustedProxies, normalizeAddress, parseIPv4, parseIPv6 } from '../../src/http/trusted-proxies.js'
import type { IncomingMessage } from 'node:http'
import { ALWAYS_DROPPED_REQUEST_HEADERS, CLIENT_IP_HEADERS, RequestHeaderPolicy, parseMaxForwards } from '../../src/gateway/headers.js'
import { canonicalHeaderName, connectionNamed } from '../../src/gateway/header-names.js'
import { headerObject, headerPairs } from '../../src/gateway/flat-headers.js'
import { responseHeaderList } from '../../src/gateway/response-headers.js'

t.test('canonicalHeaderName lower-cases and maps _ to -', async (t) => {
  t.equal(canonicalHeaderName('X_Auth_Subject'), 'x-auth-subject')
  t.equal(canonicalHeaderName('x-auth_subject'), 'x-auth-subject')
  t.equal(canonicalHeaderName('X-AUTH-SUBJECT'), 'x-auth-subject')
  t.equal(canonicalHeaderName('accept'), 'accept')
})

t.test('connectionNamed lists the headers a Connection header names', async (t) => {
  t.equal(connectionNamed(undefined), null)
  t.equal(connectionNamed('keep-alive'), null)
  t.equal(connectionNamed('Close'), null)
  t.equal(connectionNamed('Upgrade'), null)
  t.same([...(connectionNamed('keep-alive, X-Foo ,x_bar') ?? [])], ['x-foo', 'x-bar'])
  t.same([...(connectionNamed(['close', 'X-Foo']) ?? [])], ['x-foo'])
  t.equal(connectionNamed('keep-alive, upgrade'), null)
})

t.test('responseHeaderList drops hop-by-hop, Connection-named headers and X-Request-Id, keeps Trailer, case, order and repeats', async (t) => {
  const raw = [
    ['Connection', 'keep-alive, X_Hop'],
    ['Keep-Alive', 'timeout=5'],
    ['Transfer-Encoding', 'chunked'],
    ['Proxy-Authenticate', 'Basic'],
    ['Upgrade', 'h2c'],
    ['TE', 'trailers'],
    ['x-hop', 'gone'],
    ['X-Request-Id', 'upstream-id'],
    ['Trailer', 'x-sum'],
    ['Set-Cookie', 'a=1'],
    ['Content-Type', 'text/plain'],
    ['set-cookie', 'b=2'],
  ].flatMap(([name, value]) => [Buffer.from(name as string, 'latin1'), Buffer.from(value as string, 'latin1')])
  t.same(responseHeaderList(raw), ['Trailer', 'x-sum', 'Set-Cookie', 'a=1', 'Content-Type', 'text/plain', 'set-cookie', 'b=2'])
  t.same(responseHeaderList(null), [])
  t.same(responseHeaderList(['Connection', 'close', 'X-A', '1']), ['X-A', '1'], 'string lists too')
})

t.test('responseHeaderList passes every byte of a value through as latin1', async (t) => {
  const value = Buffer.from([0x63, 0x61, 0x66, 0xc3, 0xa9, 0xff])
  const out = responseHeaderList([Buffer.from('X-Name'), value])
  t.equal(out[0], 'X-Name')
  t.same(Buffer.from(out[1] as string, 'latin1'), value)
})

t.test('headerPairs pairs a flat list', async (t) => {
  t.same(headerPairs(['a', '1', 'b', '2']), [
    ['a', '1'],
    ['b', '2'],
  ])
})

t.test('headerObject folds a flat list for node:http', async (t) => {
  t.same(headerObject(['Cookie', 'a=1', 'cookie', 'b=2', 'X-A', '1', 'x-a', '2', 'x-a', '3', 'Host', 'h']), {
    cookie: 'a=1; b=2',
    'x-a': ['1', '2', '3'],
    host: 'h',
  })
})

t.test('IP parsing', async (t) => {
  t.equal(parseIPv4('10.1.2.3'), 0x0a010203)
  t.equal(parseIPv4('255.255.255.255'), 0xffffffff)
  for (const bad of ['10.1.2', '10.1.2.256', '1.2.3.4.5', 'a.b.c.d', '1..2.3', '01234.1.1.1']) t.equal(parseIPv4(bad), null, bad)
  t.same(parseIPv6('::1'), [0, 0, 0, 1])
  t.same(parseIPv6('2001:db8::8a2e:370:7334'), [0x20010db8, 0, 0x8a2e, 0x03707334])
  t.same(parseIPv6('::ffff:10.0.0.1'), [0, 0, 0xffff, 0x0a000001])
  t.same(parseIPv6('fe80::1%eth0'), [0xfe800000, 0, 0, 1])
  t.same(parseIPv6('1:2:3:4:5:6:7:8'), [0x00010002, 0x00030004, 0x00050006, 0x00070008])
  for (const bad of ['1:2:3:4:5:6:7', '1::2::3', 'g::1', '12345::1', '1:2:3:4:5:6:7:8:9', '::1.2.3']) t.equal(parseIPv6(bad), null, bad)
  t.equal(normalizeAddress('::ffff:127.0.0.1'), '127.0.0.1')
  t.equal(normalizeAddress('::FFFF:10.0.0.1'), '10.0.0.1')
  t.equal(normalizeAddress('::1'), '::1')
  t.equal(normalizeAddress(undefined), undefined)
})

t.test('TrustedProxies matches exact addresses and CIDR ranges, IPv4 and IPv6', async (t) => {
  const trusted = new TrustedProxies(['192.168.1.5', '10.0.0.0/8', 'fd00::/8', '2001:db8:0:0:0:0:0:1', '::ffff:172.16.0.0/108'])
  const cases: [string, boolean][] = [
    ['192.168.1.5', true],
    ['192.168.1.6', false],
    ['10.255.0.1', true],
    ['11.0.0.1', false],
    ['::ffff:10.2.3.4', true],
    ['fd12:3456::1', true],
    ['fe80::1', false],
    ['2001:db8::1', true],
    ['2001:db8::2', false],
    ['172.16.5.5', true],
    ['172.32.0.1', false],
    ['not an ip', false],
  ]
  for (const [address, expected] of cases) t.equal(trusted.has(address), expected, address)
  t.equal(trusted.has(undefined), false)

  const nobody = new TrustedProxies([])
  t.ok(nobody.empty)
  t.equal(nobody.has('127.0.0.1'), false)

  const everyone = new TrustedProxies(['0.0.0.0/0', '::/0'])
  t.ok(everyone.has('8.8.8.8'))
  t.ok(everyone.has('2001:4860::8888'))

  const hostBits = new TrustedProxies(['10.1.2.3/16'])
  t.ok(hostBits.has('10.1.200.1'), 'host bits in a range are ignored')

  const mapped = new TrustedProxies(['::ffff:192.0.2.7'])
  t.ok(mapped.has('192.0.2.7'), 'an IPv4-mapped entry matches the IPv4 peer')

  for (const bad of ['10.0.0.0/33', 'fd00::/129', 'example.com', '10.0.0.0/x', '']) {
    t.throws(() => new TrustedProxies([bad]), TypeError, bad)
  }
})

t.test('forwardedElement quotes what RFC 7239 requires', async (t) => {
  t.equal(forwardedElement('10.0.0.1', 'api.example.com', 'https'), 'for=10.0.0.1;host="api.example.com";proto=https')
  t.equal(forwardedElement('2001:db8::1', 'h:8080', 'http'), 'for="[2001:db8::1]";host="h:8080";proto=http')
  t.equal(forwardedElement(undefined, undefined, 'http'), 'for=unknown;proto=http')
  t.equal(forwardedElement('10.0.0.1', 'a"b\\c', 'http'), 'for=10.0.0.1;host="a\\"b\\\\c";proto=http')
})

t.test('RequestHeaderPolicy: path-override and client-IP headers, Max-Forwards', async (t) => {
  const policy = new RequestHeaderPolicy({
    identityHeaders: { subject: 'X-Auth-Subject', clientId: 'X-Auth-Client-Id', scope: 'X-Auth-Scope', issuer: 'X-Auth-Issuer', claims: {} },
    alsoStrip: [],
    forwardAuthorization: false,
    preserveHost: false,
    upstreamHost: 'up:80',
    trustedProxies: new TrustedProxies(['10.0.0.1']),
  })
  const request = (peer: string, method: string, pairs: Array<[string, string]>): IncomingMessage => {
    const rawHeaders = pairs.flat()
    const headers: Record<string, string> = {}
    for (const [name, value] of pairs) headers[name.toLowerCase()] = value
    return { method, rawHeaders, headers, socket: { remoteAddress: peer } } as unknown as IncomingMessage
  }
  const names = (flat: string[]): string[] => flat.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase())
  const value = (flat: string[], name: string): string | undefined => {
    const at = flat.findIndex((n, i) => i % 2 === 0 && n.toLowerCase() === name)
    return at === -1 ? undefined : flat[at + 1]
  }

  const overrides: Array<[string, string]> = CLIENT_IP_HEADERS.map((h): [string, string] => [h, '10.9.9.9'])
  const spoof: Array<[string, string]> = [
    ['X-Original-URL', '/admin'],
    ['X_Rewrite_URL', '/admin'],
    ['X-Override-URL', '/admin'],
    ['X-Original-URI', '/admin'],
    ['X-HTTP-DestinationURL', '/admin'],
    ['Accept', '*/*'],
  ]
  const fromClient = policy.build(request('192.0.2.7', 'GET', [...spoof, ...overrides]), null, null, false)
  t.same(
    names(fromClient).filter((n) => !n.startsWith('x-forwarded-')),
    ['accept'],
    'path overrides and client-IP claims dropped from an untrusted peer',
  )
  const fromProxy = policy.build(request('10.0.0.1', 'GET', [...spoof, ...overrides]), null, null, false)
  for (const h of CLIENT_IP_HEADERS) t.equal(value(fromProxy, h), '10.9.9.9', `${h} kept from a trusted proxy`)
  t.notOk(
    names(fromProxy).some((n) => n.replaceAll('_', '-').startsWith('x-original') || n.includes('rewrite')),
    'path overrides dropped even from a trusted proxy',
  )
  const connectionNamedIp = policy.build(
    request('10.0.0.1', 'GET', [
      ['Connection', 'X-Real-IP'],
      ['X-Real-IP', '1.2.3.4'],
    ]),
    null,
    null,
    false,
  )
  t.equal(value(connectionNamedIp, 'x-real-ip'), undefined, 'a client-IP header the Connection header names is hop-by-hop')

  t.equal(value(policy.build(request('192.0.2.7', 'TRACE', [['Max-Forwards', '5']]), null, null, false), 'max-forwards'), '4', 'TRACE: decremented')
  t.equal(value(policy.build(request('192.0.2.7', 'OPTIONS', [['Max-Forwards', '1']]), null, null, false), 'max-forwards'), '0', 'OPTIONS: decremented')
  t.equal(value(policy.build(request('192.0.2.7', 'GET', [['Max-Forwards', '5']]), null, null, false), 'max-forwards'), '5', 'other methods: untouched')
  t.equal(value(policy.build(request('192.0.2.7', 'TRACE', [['Max-Forwards', 'x']]), null, null, false), 'max-forwards'), 'x', 'not a number: untouched')
  t.equal(parseMaxForwards(' 0 '), 0)
  t.equal(parseMaxForwards(['1', '2']), null)
  t.equal(parseMaxForwards(undefined), null)
  t.ok(ALWAYS_DROPPED_REQUEST_HEADERS.includes('x-original-url'))
})

t.test("RequestHeaderPolicy removes bearward's own cookies from each Cookie line, upgrades too (issue #38)", async (t) => {
  const policy = new RequestHeaderPolicy({
    identityHeaders: { subject: 'X-Auth-Subject', clientId: 'X-Auth-Client-Id', scope: 'X-Auth-Scope', issuer: 'X-Auth-Issuer', claims: {} },
    alsoStrip: [],
    forwardAuthorization: true,
    preserveHost: false,
    upstreamHost: 'up:80',
    trustedProxies: new TrustedProxies([]),
  })
  const pairs: Array<[string, string]> = [
    ['Cookie', 'a=1; bw_session=s; b=2'],
    ['COOKIE', '__Host-bw_csrf=c'],
    ['cookie', 'c=3; __Secure-BW_KNOWN=k'],
    ['Upgrade', 'websocket'],
  ]
  const headers: Record<string, string> = {}
  for (const [name, value] of pairs) headers[name.toLowerCase()] = value
  const req = { method: 'GET', rawHeaders: pairs.flat(), headers, socket: { remoteAddress: '192.0.2.7' } } as unknown as IncomingMessage
  for (const upgrade of [false, true]) {
    const out = policy.build(req, null, null, upgrade)
    const cookies = out.flatMap((n, i) => (i % 2 === 0 && n.toLowerCase() === 'cookie' ? [out[i + 1]] : []))
    t.same(cookies, ['a=1; b=2', 'c=3'], `upgrade ${upgrade}: the other cookies, line by line`)
    if (upgrade) t.equal(headerObject(out).cookie, 'a=1; b=2; c=3', 'one Cookie line for node:http')
  }
})
