/**
 * The attacker's pass on admin-managed clients (issue #42), through
 * `bin/bearward`: a disabled client's tokens, a YAML client added by reload
 * over an admin-managed one, ids and metadata an admin must not be able to
 * give, two rotations racing. Each sends the attack and checks the refusal.
 */
import { writeFile } from 'node:fs/promises'
import t, { type Test } from 'tap'
import { accessTokenOf, AdminClient, adminConfig, adminToken, openApiChecker } from '../helpers/admin-api.js'
import { DEMO_SECRET } from '../helpers/as-config.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { basic } from '../helpers/client-auth.js'
import { freePort, reply } from '../helpers/http.js'
import { form } from '../helpers/store-pair.js'
import { startUpstream } from '../helpers/upstream.js'

async function startAdmin(t: Test) {
  const up = await startUpstream('orders')
  const port = await freePort()
  const config = await adminConfig({ port, upstream: up.url })
  const cfg = await tempConfig(config)
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  /** Change the config file and reload; resolves with the log line of the outcome. */
  const reload = async (change: (c: typeof config) => void): Promise<Record<string, unknown>> => {
    change(config)
    await writeFile(cfg.file, JSON.stringify(config))
    const seen = bin.lines.length
    bin.child.kill('SIGHUP')
    return bin.waitForLog((e) => String(e.msg).startsWith('config reload') && bin.lines.length > seen)
  }
  const api = new AdminClient(bin.admin, await openApiChecker(bin.admin))
  const write = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin'))
  return { bin, up, api, write, reload }
}

/**
 * One instance for the file, since a start costs about a second of CPU on
 * the suite's two cores: each attack uses clients of its own; the refused
 * reload runs last (it leaves the running config as it was, which is what it
 * checks).
 */
let shared: ReturnType<typeof startAdmin> | undefined
function sharedAdmin(): ReturnType<typeof startAdmin> {
  shared ??= startAdmin(t)
  return shared
}

function clientCredentials(base: string, id: string, secret: string, scope = 'orders:read'): Promise<Response> {
  return form(`${base}/token`, { grant_type: 'client_credentials', scope }, basic(id, secret))
}

const orders = (base: string, token: string) => reply(fetch(`${base}/orders`, { headers: { authorization: `Bearer ${token}` } }))

t.test('admin-managed clients under attack', async (t) => {
  const { bin, up, api, write } = await sharedAdmin()

  t.test("a disabled client's client-credentials token is refused at once, and a deleted one's", async (t) => {
    for (const [id, end] of [
      ['svc-a', 'disable'],
      ['svc-b', 'delete'],
    ] as const) {
      const created = await api.call('POST', '/clients', { token: write, body: { client_id: id, grant_types: ['client_credentials'], scope: 'orders:read' } })
      t.equal(created.status, 201, created.text)
      const access = accessTokenOf(await reply(clientCredentials(bin.url, id, String(created.json?.client_secret))))
      t.equal((await orders(bin.url, access)).status, 200, `${id}: the token works`)
      const seen = up.seen.length
      const ended =
        end === 'disable' ? await api.call('POST', `/clients/${id}/disable`, { token: write }) : await api.call('DELETE', `/clients/${id}`, { token: write })
      t.ok(ended.status === 200 || ended.status === 204, `${end}: ${ended.status}`)
      const after = await orders(bin.url, access)
      t.equal(after.status, 401, `${end}: its live token is refused`)
      t.equal(up.seen.length, seen, `${end}: nothing reached the upstream`)
      if (end === 'disable') {
        t.equal((await api.call('POST', `/clients/${id}/enable`, { token: write })).status, 200)
        const fresh = accessTokenOf(await reply(clientCredentials(bin.url, id, String(created.json?.client_secret))))
        t.equal((await orders(bin.url, fresh)).status, 200, 'enabled again at once: a new token works')
        t.equal((await orders(bin.url, access)).status, 401, 'the one from before the disable is still refused')
      }
    }
  })

  t.test('ids and metadata an admin cannot give a client', async (t) => {
    const attempts: Array<[string, Record<string, unknown>, number]> = [
      ['the id of a YAML client', { client_id: 'web', grant_types: ['client_credentials'], scope: 'orders:read' }, 409],
      ['the id of an admin_api client', { client_id: 'ops', grant_types: ['client_credentials'], scope: 'orders:read' }, 409],
      ['a URL id (a metadata document’s)', { client_id: 'https://evil.example/client', grant_types: ['client_credentials'] }, 400],
      ['an id with a space', { client_id: 'a b', grant_types: ['client_credentials'] }, 400],
      ['an id with a newline', { client_id: 'a\nb', grant_types: ['client_credentials'] }, 400],
      ['the admin scope', { client_id: 'esc', grant_types: ['client_credentials'], scope: 'bearward:admin' }, 400],
      ['the read-only admin scope', { client_id: 'esc', grant_types: ['client_credentials'], scope: 'orders:read bearward:admin:read' }, 400],
      [
        'a public client with client_credentials',
        { client_id: 'pub', grant_types: ['client_credentials'], token_endpoint_auth_method: 'none', scope: 'orders:read' },
        400,
      ],
      ['a javascript: redirect URI', { client_id: 'js', redirect_uris: ['javascript:alert(1)'], grant_types: ['authorization_code'] }, 400],
    ]
    for (const [label, body, status] of attempts) {
      const r = await api.call('POST', '/clients', { token: write, body })
      t.equal(r.status, status, `${label}: ${r.text}`)
    }
    const esc = await adminToken(bin.url, 'esc', 'bearward:admin')
    t.equal(esc.status, 401, 'no such client got made')
  })

  t.test('two rotations racing from one ETag: exactly one wins, and only its secret works', async (t) => {
    const created = await api.call('POST', '/clients', { token: write, body: { client_id: 'race', grant_types: ['client_credentials'], scope: 'orders:read' } })
    const first = String(created.json?.client_secret)
    const [a, b] = await Promise.all([
      api.call('POST', '/clients/race/secrets', { token: write, headers: { 'if-match': '"r1"' } }),
      api.call('POST', '/clients/race/secrets', { token: write, headers: { 'if-match': '"r1"' } }),
    ])
    t.same([a.status, b.status].sort(), [200, 412], 'one rotation, one stale')
    const winner = a.status === 200 ? a : b
    const loser = a.status === 200 ? b : a
    t.equal(loser.json?.client_secret, undefined, 'the stale one hands out no secret')
    t.equal((await clientCredentials(bin.url, 'race', String(winner.json?.client_secret))).status, 200, 'the new secret works')
    t.equal((await clientCredentials(bin.url, 'race', first)).status, 200, 'the previous one works in its overlap')
    t.equal((await api.call('GET', '/clients/race', { token: write })).json?.revision, 2, 'one revision, not two')
  })
})

t.test('a reload adding a YAML client with the id of an admin-managed one is refused, naming both', async (t) => {
  const { bin, api, write, reload } = await sharedAdmin()
  const created = await api.call('POST', '/clients', {
    token: write,
    body: { client_id: 'partner', grant_types: ['client_credentials'], scope: 'orders:read' },
  })
  const stored = String(created.json?.client_secret)
  const outcome = await reload((c) => {
    c.authorization_server.clients.push({
      client_id: 'partner',
      type: 'confidential',
      secret_hash: (c.authorization_server.clients.find((x) => x.client_id === 'ops') as { secret_hash: string }).secret_hash,
      grant_types: ['client_credentials'],
      scopes: ['orders:read', 'orders:write'],
    })
  })
  t.match(String(outcome.msg), /^config reload refused.*authorization_server\.clients\[\d+\]: client_id partner is also a client created through the admin API/)
  t.equal((await clientCredentials(bin.url, 'partner', stored)).status, 200, 'the stored client keeps its secret')
  t.equal((await clientCredentials(bin.url, 'partner', DEMO_SECRET, 'orders:write')).status, 401, 'the YAML one does not take its place')
})
