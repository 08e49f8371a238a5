/**
 * Issue #28.6, as an attacker tries it: one IPv6 /64 is 2^64 addresses, so
 * per-address limits count IPv6 by network (`rate_limit.ipv6_prefix`) for
 * registration, client authentication and sign-in, and an IPv4-mapped
 * address counts as its IPv4. And the store holds at most
 * `registration.max_clients` live registered clients, on memory and on Redis
 * across two instances: past it 503 temporarily_unavailable with Retry-After,
 * counted in a metric; deleted and expired clients free their seats.
 * Addresses come from X-Forwarded-For (127.0.0.1 is a trusted proxy here).
 */
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { addressBucket } from '../../src/http/address-bucket.js'
import { RedisStore } from '../../src/store/redis.js'
import { basic, send, startAs, type Harness, type Reply } from '../helpers/as-back.js'
import { authorizeUrl, authParams, formWith, frontYaml, get, setCookies, startFront } from '../helpers/as-front.js'
import { postForm, reply } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'

t.test('addressBucket: IPv4 as itself, mapped as IPv4, IPv6 by its network', async (t) => {
  const cases: Array<[string, number, string]> = [
    ['198.51.100.7', 64, '198.51.100.7'],
    ['::ffff:198.51.100.7', 64, '198.51.100.7'],
    ['::FFFF:198.51.100.7', 64, '198.51.100.7'],
    ['2001:db8:1:2:aaaa:bbbb:cccc:dddd', 64, '2001:db8:1:2:0:0:0:0/64'],
    ['2001:db8:1:2::1', 64, '2001:db8:1:2:0:0:0:0/64'],
    ['2001:DB8:1:2:ffff::', 64, '2001:db8:1:2:0:0:0:0/64'],
    ['2001:db8:1:2ff::1', 56, '2001:db8:1:200:0:0:0:0/56'],
    ['2001:db8:1:2ff::1', 60, '2001:db8:1:2f0:0:0:0:0/60'],
    ['2001:db8::1', 128, '2001:db8:0:0:0:0:0:1/128'],
    ['2001:db8:abcd:ef01::1', 36, '2001:db8:a000:0:0:0:0:0/36'],
    ['::1', 64, '0:0:0:0:0:0:0:0/64'],
    ['unknown', 64, 'unknown'],
  ]
  for (const [address, prefix, bucket] of cases) t.equal(addressBucket(address, prefix), bucket, `${address} /${prefix}`)
})

/** The `registration` section, with a generous per-address limit unless a test sets one. */
function registration(o: { perAddress?: number; maxClients?: number } = {}): string {
  return `  registration: { enabled: true, scopes: [orders:read], client_ttl: 1h, max_clients: ${o.maxClients ?? 10000}, rate_limit: { per_address: ${o.perAddress ?? 1000}, window: 10m } }`
}

const CLIENT = {
  client_name: 'Desk Tool',
  redirect_uris: ['http://127.0.0.1:33418/callback'],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code'],
  response_types: ['code'],
}

function register(h: Pick<Harness, 'url'>, from?: string): Promise<Reply> {
  return send(`${h.url}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(from !== undefined ? { 'x-forwarded-for': from } : {}) },
    body: JSON.stringify(CLIENT),
  })
}

t.test('registration: rotating addresses inside one /64 share one limit', async (t) => {
  const h = await startAs({ asExtra: registration({ perAddress: 2 }) })
  t.teardown(() => h.close())
  const statuses: number[] = []
  for (let i = 1; i <= 6; i++) statuses.push((await register(h, `2001:db8:aaaa:1::${i.toString(16)}`)).status)
  t.same(statuses, [201, 201, 429, 429, 429, 429], 'six addresses, one network: two registrations')
  t.equal((await register(h, '2001:db8:aaaa:1:ffff:ffff:ffff:ffff')).status, 429, 'the far end of the /64 too')
  t.equal((await register(h, '2001:db8:aaaa:2::1')).status, 201, 'the next /64 has its own count')
  t.equal((await register(h, '198.51.100.7')).status, 201)
  t.equal((await register(h, '::ffff:198.51.100.7')).status, 201)
  t.equal((await register(h, '::ffff:198.51.100.7')).status, 429, 'IPv4-mapped counts as the IPv4 address')
})

t.test('registration: ipv6_prefix sets the network size', async (t) => {
  const h = await startAs({ asExtra: registration({ perAddress: 1 }), rateLimit: { ipv6_prefix: 48 } })
  t.teardown(() => h.close())
  t.equal((await register(h, '2001:db8:aaaa:1::1')).status, 201)
  t.equal((await register(h, '2001:db8:aaaa:ffff::1')).status, 429, 'another /64 of the same /48')
  t.equal((await register(h, '2001:db8:aaab::1')).status, 201, 'another /48')
})

t.test('client authentication: failures from rotating addresses in one /64 lock that network, not others', async (t) => {
  const h = await startAs({ rateLimit: { client_auth_address_max_failures: 4 } })
  t.teardown(() => h.close())
  const cc = { grant_type: 'client_credentials' }
  for (let i = 1; i <= 4; i++) {
    const r = await reply(postForm(`${h.url}/token`, cc, { authorization: basic(`made-up-${i}`, 'guess'), 'x-forwarded-for': `2001:db8:bbbb:1::${i}` }))
    t.equal(r.status, 401, `guess ${i} from its own address`)
  }
  const locked = await reply(postForm(`${h.url}/token`, cc, { authorization: basic('looker'), 'x-forwarded-for': '2001:db8:bbbb:1:9:9:9:9' }))
  t.equal(locked.status, 429, 'a fresh address in the same /64 is refused, with the right secret')
  t.equal(locked.json?.error, 'invalid_client')
  t.equal(locked.headers.get('retry-after'), '300')
  t.equal(
    (await reply(postForm(`${h.url}/token`, cc, { authorization: basic('looker'), 'x-forwarded-for': '2001:db8:bbbb:2::1' }))).status,
    200,
    'the neighbouring /64 is not',
  )
})

t.test('sign-in: failures from rotating addresses in one /64 lock that network (login_address_max_failures)', async (t) => {
  const front = await startFront(await frontYaml({ topExtra: 'gateway: { trusted_proxies: [127.0.0.1] }' }))
  t.teardown(() => front.close())
  const attempt = async (username: string, ip: string): Promise<number> => {
    const url = authorizeUrl(front, authParams())
    const page = await get(url)
    const cookies = setCookies(page.headers)
    const name = cookies.has('bw_csrf') ? 'bw_csrf' : '__Host-bw_csrf'
    const form = formWith(page.text, url, 'password')
    const res = await postForm(
      form.action,
      { ...form.fields, username, password: 'wrong password' },
      { cookie: `${name}=${cookies.get(name)?.value ?? ''}`, 'x-forwarded-for': ip, origin: front.issuer },
    )
    await res.arrayBuffer()
    return res.status
  }
  // login_address_max_failures is 6 in this config; each username differs, so only the address counts.
  for (let i = 1; i <= 6; i++) t.not(await attempt(`user-${i}`, `2001:db8:cccc:1::${i}`), 429, `failure ${i}`)
  t.equal(await attempt('user-7', '2001:db8:cccc:1::77'), 429, 'another address of the /64 is locked out')
  t.not(await attempt('user-8', '2001:db8:cccc:2::1'), 429, 'the next /64 is not')
})

/** Register from distinct networks (so the per-address limit never interferes). */
function registerFrom(h: Pick<Harness, 'url'>, i: number): Promise<Reply> {
  return register(h, `203.0.113.${i}`)
}

t.test('the cap on live registered clients (memory)', async (t) => {
  const h = await startAs({ asExtra: registration({ maxClients: 2 }) })
  t.teardown(() => h.close())
  const first = await registerFrom(h, 1)
  t.equal(first.status, 201)
  t.equal((await registerFrom(h, 2)).status, 201)
  h.clock.advance(60_000)
  const full = await registerFrom(h, 3)
  t.equal(full.status, 503, 'full')
  t.same(full.json, { error: 'temporarily_unavailable', error_description: 'This server holds as many registered clients as it allows; try again later' })
  t.equal(full.headers.get('retry-after'), '3540', 'until the first client frees its seat (client_ttl 1h, a minute ago)')
  t.equal(full.headers.get('cache-control'), 'no-store')
  t.equal(h.metrics.registrationsRefused.get(), 1, 'the refusal is counted')
  t.match(h.metrics.render(), /\nbearward_registered_clients 2\n/, 'the live count is a gauge')
  t.equal(await h.store.clients.count(), 2, 'nothing was stored')

  const id = String(first.json?.client_id)
  const deleted = await send(`${h.url}/register?client_id=${encodeURIComponent(id)}`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${String(first.json?.registration_access_token)}` },
  })
  t.equal(deleted.status, 204)
  t.match(h.metrics.render(), /\nbearward_registered_clients 1\n/)
  t.equal((await registerFrom(h, 4)).status, 201, 'a deleted client frees its seat')
  t.equal((await registerFrom(h, 5)).status, 503)
  h.clock.advance(3600_000)
  t.equal((await registerFrom(h, 6)).status, 201, 'expired clients free theirs')
  t.equal(h.metrics.registrationsRefused.get(), 2)
})

t.test('the cap on live registered clients holds on Redis across two instances', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  // Redis judges TTLs by its own clock: the manual clocks start at real time.
  const start = Date.now()
  const make = (): Promise<Harness> =>
    startAs({
      clock: new ManualClock(start),
      asExtra: registration({ maxClients: 5 }),
      store: (clock) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock }),
    })
  const [a, b] = await Promise.all([make(), make()])
  t.teardown(async () => {
    await a.close()
    await b.close()
  })
  // Twenty strangers at once, from twenty networks, half through each instance.
  const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => registerFrom(i % 2 === 0 ? a : b, i + 1)))
  const statuses = replies.map((r) => r.status)
  t.equal(statuses.filter((s) => s === 201).length, 5, 'exactly five registered')
  t.equal(statuses.filter((s) => s === 503).length, 15, 'the others refused')
  t.equal(await a.store.clients.count(), 5)
  t.equal(a.metrics.registrationsRefused.get() + b.metrics.registrationsRefused.get(), 15, 'every refusal counted by the instance that refused it')
  const seated = replies.filter((r) => r.status === 201)
  for (const r of seated) t.not(await b.store.clients.get(String(r.json?.client_id)), null, 'each registered client is in the shared store')
  const gone = seated[0]
  t.equal(
    (
      await send(`${b.url}/register?client_id=${encodeURIComponent(String(gone?.json?.client_id))}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${String(gone?.json?.registration_access_token)}` },
      })
    ).status,
    204,
  )
  t.equal((await registerFrom(a, 100)).status, 201, 'a deletion through one instance frees a seat for the other')
  t.equal((await registerFrom(b, 101)).status, 503)
})
