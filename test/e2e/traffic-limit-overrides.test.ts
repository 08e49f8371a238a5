/**
 * A paying tier through `bin/bearward` (issue #44): a client of the built-in
 * authorization server with `rate_limits: { per-client: { limit } }` gets its
 * own limit on a route that limits every other client lower, told in its
 * RateLimit-Policy, and only what was allowed reaches the upstream.
 */
import t from 'tap'
import { startBin, tempConfig } from '../helpers/bin.js'
import { asConfig, DEMO_SECRET, demoClient } from '../helpers/as-config.js'
import { configYaml } from '../helpers/config-tree.js'
import { basic } from '../helpers/client-auth.js'
import { freePort } from '../helpers/http.js'
import { readRateLimitFields } from '../helpers/ratelimit-fields.js'
import { startUpstream } from '../helpers/upstream.js'

const up = await startUpstream('orders')
t.teardown(() => up.close())
const port = await freePort()
const config = await asConfig({
  port,
  upstream: up.url,
  routes: [
    {
      name: 'limited',
      match: { path: '/limited' },
      upstream: up.url,
      scopes: { GET: ['orders:read'] },
      rate_limits: [{ name: 'per-client', key: 'client', limit: 2, per: '1m' }],
    },
  ],
})
const service = demoClient(config, 'service')
config.authorization_server.clients.push({ ...service, client_id: 'paying', rate_limits: { 'per-client': { limit: 5 } } })
const cfg = await tempConfig(configYaml(config))
t.teardown(() => cfg.cleanup())
const bin = await startBin(cfg.file)
t.teardown(() => bin.stop())

async function tokenOf(clientId: string): Promise<string> {
  const res = await fetch(`${bin.url}/token`, {
    method: 'POST',
    headers: { authorization: basic(clientId, DEMO_SECRET), 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&scope=orders%3Aread',
  })
  if (res.status !== 200) throw new Error(`token for ${clientId}: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { access_token: string }).access_token
}

/** `n` requests one after another: their statuses, the last answer's limit (RateLimit-Policy `q`) and Retry-After. */
async function burst(token: string, n: number): Promise<{ statuses: number[]; limit: number | undefined; retryAfter: string | null }> {
  const statuses: number[] = []
  let last: Response | null = null
  for (let i = 0; i < n; i++) {
    last = await fetch(`${bin.url}/limited/x`, { headers: { authorization: `Bearer ${token}` } })
    await last.arrayBuffer()
    statuses.push(last.status)
  }
  const fields = readRateLimitFields(Object.fromEntries(last?.headers ?? []))
  return { statuses, limit: fields.policies.find((p) => p.name === 'per-client')?.q, retryAfter: last?.headers.get('retry-after') ?? null }
}

t.test('the paying client gets its own limit; every other client the route’s', async (t) => {
  const seenBefore = up.seen.length
  const free = await burst(await tokenOf('service'), 3)
  t.same(free.statuses, [200, 200, 429], 'the route’s limit: 2 per minute')
  t.ok(Number(free.retryAfter) > 0, 'the refusal says when to retry')
  t.equal(free.limit, 2, 'its RateLimit-Policy names the route’s limit')

  const paying = await burst(await tokenOf('paying'), 6)
  t.same(paying.statuses, [200, 200, 200, 200, 200, 429], 'the override: 5 per minute')
  t.equal(paying.limit, 5, 'its RateLimit-Policy names its own limit')
  t.equal(up.seen.length - seenBefore, 7, 'only the allowed requests reached the upstream')
})
