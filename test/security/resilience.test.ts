/**
 * Floods of bad requests against the real binary: each kind, 500 at once,
 * must be answered with its proper 4xx, leave the process running, /healthz
 * at 200 and a valid request still served. Malformed HTTP on raw sockets gets
 * a 400 and the server keeps serving the next connection.
 */
import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { AT_HEADER, accessClaims, b64url, basic, healthy, rawHttp, serviceToken, signEs256, startTarget, type Target } from '../helpers/attack.js'

let target: Target

t.before(async () => {
  // The floods of wrong client secrets come through a trusted proxy on behalf
  // of an attacker's address (X-Forwarded-For): failed client authentications
  // are throttled per address, and the valid requests of assertServing come
  // from 127.0.0.1 itself, whose own record is clean.
  target = await startTarget({ gateway: '{ trusted_proxies: [127.0.0.1] }' })
})
t.teardown(() => target.close())

const FLOOD = 500

/** Fire `n` requests at once; return the count of each status (0 = network error). */
async function flood(n: number, one: (i: number) => Promise<number>): Promise<Map<number, number>> {
  const statuses = await Promise.all(Array.from({ length: n }, (_, i) => one(i).catch(() => 0)))
  const counts = new Map<number, number>()
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1)
  return counts
}

const status = async (res: Promise<Response>): Promise<number> => {
  const r = await res
  await r.arrayBuffer()
  return r.status
}

/** After a flood: still running, healthy, and a good request works. */
async function assertServing(t: Test, label: string): Promise<void> {
  t.equal(target.bin.child.exitCode, null, `${label}: the process is running`)
  t.ok(await healthy(target), `${label}: /healthz 200`)
  const token = await serviceToken(target)
  const res = await fetch(`${target.url}/orders/1`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(res.status, 200, `${label}: a valid request is still served`)
  await res.arrayBuffer()
}

function assertAll(t: Test, counts: Map<number, number>, allowed: number[], n: number, label: string): void {
  const summary = [...counts].map(([s, c]) => `${s}x${c}`).join(' ')
  const good = allowed.reduce((sum, s) => sum + (counts.get(s) ?? 0), 0)
  t.equal(good, n, `${label}: all ${n} answered ${allowed.join('/')} (${summary})`)
}

t.test('500 concurrent forged tokens at the gateway', async (t) => {
  const forged = [
    signEs256(target.key, { ...AT_HEADER, alg: 'none' }, accessClaims(target)),
    `${b64url({ alg: 'HS256', typ: 'at+jwt' })}.${b64url(accessClaims(target))}.${randomBytes(32).toString('base64url')}`,
    signEs256(target.key, AT_HEADER, accessClaims(target, { iss: 'https://evil.example' })),
  ]
  const counts = await flood(FLOOD, (i) => status(fetch(`${target.url}/orders/${i}`, { headers: { authorization: `Bearer ${forged[i % forged.length]}` } })))
  assertAll(t, counts, [401], FLOOD, 'forged tokens')
  t.equal(target.upstream.seen.length, 0, 'nothing reached the upstream')
  await assertServing(t, 'forged tokens')
})

t.test('500 concurrent requests with no or malformed credentials', async (t) => {
  const counts = await flood(FLOOD, (i) => {
    const headers: Record<string, string> = i % 3 === 0 ? {} : i % 3 === 1 ? { authorization: 'Bearer a.b' } : { authorization: `Bearer ${'x'.repeat(8000)}` }
    return status(fetch(`${target.url}/orders/${i}`, { headers }))
  })
  assertAll(t, counts, [400, 401], FLOOD, 'missing or malformed')
  await assertServing(t, 'missing or malformed')
})

t.test('500 concurrent path traversal attempts', async (t) => {
  const before = target.upstream.seen.length
  const paths = ['/orders/%2e%2e/%2e%2e/etc/passwd', '/orders/..%2f..%2fadmin', '/%2e%2e/orders', '/orders/%00', '/orders\\..\\x']
  const counts = await flood(FLOOD, (i) =>
    rawHttp(target.url, `GET ${paths[i % paths.length]} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`).then((r) => r.status),
  )
  assertAll(t, counts, [400, 401], FLOOD, 'traversal')
  t.equal(target.upstream.seen.length, before, 'nothing reached the upstream')
  await assertServing(t, 'traversal')
})

t.test('500 concurrent bad token requests, and 100 with unknown clients (each costs a password hash)', async (t) => {
  const cheap = await flood(FLOOD, (i) => {
    const variants: Array<() => Promise<Response>> = [
      () => fetch(`${target.url}/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"grant_type":"client_credentials"}' }),
      () =>
        fetch(`${target.url}/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Basic !!' },
          body: 'grant_type=client_credentials',
        }),
      () =>
        fetch(`${target.url}/token`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: 'grant_type=password&username=alice&password=x',
        }),
      () => fetch(`${target.url}/token`, { method: 'GET' }),
    ]
    return status((variants[i % variants.length] as () => Promise<Response>)())
  })
  assertAll(t, cheap, [400, 401, 405], FLOOD, 'cheap bad token requests')
  const costly = await flood(100, (i) =>
    status(
      fetch(`${target.url}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(`attacker-${i}`, 'guess'), 'x-forwarded-for': '203.0.113.9' },
        body: 'grant_type=client_credentials',
      }),
    ),
  )
  // All at once, so most are checked before the address's failures add up:
  // 401 each, or 429 once the address is over client_auth_address_max_failures.
  assertAll(t, costly, [401, 429], 100, 'unknown clients')
  const after = await fetch(`${target.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('attacker-next', 'guess'), 'x-forwarded-for': '203.0.113.9' },
    body: 'grant_type=client_credentials',
  })
  t.equal(after.status, 429, 'the attacking address is throttled after the flood')
  t.ok(Number(after.headers.get('retry-after')) > 0, 'with Retry-After')
  await after.arrayBuffer()
  await assertServing(t, 'token floods')
})

t.test('500 concurrent bad authorization requests and forged form posts', async (t) => {
  const counts = await flood(FLOOD, (i) => {
    if (i % 2 === 0)
      return status(fetch(`${target.url}/authorize?response_type=code&client_id=web&redirect_uri=https%3A%2F%2Fevil.example%2F${i}`, { redirect: 'manual' }))
    return status(
      fetch(`${target.url}/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
        body: 'username=alice&password=x',
      }),
    )
  })
  assertAll(t, counts, [400, 403], FLOOD, 'authorize and login')
  await assertServing(t, 'interaction floods')
})

t.test('malformed HTTP on raw sockets gets 400 and the server keeps serving', async (t) => {
  const garbage: Array<[string, Buffer | string]> = [
    ['random bytes', randomBytes(512)],
    ['NUL bytes', Buffer.alloc(64)],
    ['TLS hello on a plain port', Buffer.from('160301002e010000', 'hex')],
    ['HTTP/9.9', 'GET / HTTP/9.9\r\nHost: x\r\n\r\n'],
    ['header without colon', 'GET /orders/1 HTTP/1.1\r\nHost: x\r\nBrokenHeader\r\n\r\n'],
    ['space in method', 'G ET /orders/1 HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['control chars in the target', 'GET /orders/\x01\x02 HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['invalid chunk size', 'POST /token HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n'],
    ['huge header line', `GET /orders/1 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70000)}\r\n\r\n`],
    ['LF only', 'GET /orders/1 HTTP/1.1\nHost: x\n\n'],
  ]
  // A header section over the parser's limit is 431 (RFC 6585 5); the rest is 400.
  const statusFor = (label: string): number => (label === 'huge header line' ? 431 : 400)
  for (const [label, bytes] of garbage) {
    const res = await rawHttp(target.url, bytes)
    t.equal(res.status, statusFor(label), `${label}: ${statusFor(label)}`)
    t.equal(res.responses, 1, `${label}: one answer`)
  }
  const counts = await flood(FLOOD, (i) => rawHttp(target.url, (garbage[i % garbage.length] as [string, Buffer | string])[1]).then((r) => r.status))
  assertAll(t, counts, [400, 431], FLOOD, 'garbage flood')
  t.equal(counts.get(431), FLOOD / garbage.length, 'garbage flood: 431 exactly for the huge header lines')
  // Valid headers, broken chunked body, no token: the gateway may refuse on
  // the headers (401) before the parser reaches the body, or the parser may
  // fail first (400). Either way exactly one answer, and nothing forwarded.
  const brokenBody = 'POST /orders/1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n'
  const broken = await rawHttp(target.url, brokenBody)
  t.ok([400, 401].includes(broken.status), `broken chunked body: refused (${broken.status})`)
  t.equal(broken.responses, 1, 'broken chunked body: one answer, no 400 written after the 401')
  // A connection that sends half a request and vanishes.
  await Promise.all(Array.from({ length: 50 }, () => rawHttp(target.url, 'GET /orders/1 HTTP/1.1\r\nHost: x\r\nAuthoriz', { timeoutMs: 50 })))
  await assertServing(t, 'malformed HTTP')
})
