/**
 * /admin/v1/people through `bin/bearward`: YAML and admin-managed people in
 * one list, create/read/update/delete with ETags, the support-desk actions
 * (disable, factors, sessions, password links) and their refusals. Every
 * answer is validated against the served OpenAPI document.
 */
import { createHash, randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { accessTokenOf, AdminClient, adminConfig, adminToken, openApiChecker } from '../helpers/admin-api.js'
import { DEMO_SECRET, oneIssuer } from '../helpers/as-config.js'
import { type RunningBin, startBin, tempConfig } from '../helpers/bin.js'
import { Browser, authorizeAsPerson, parseForms } from '../helpers/browser.js'
import { basic } from '../helpers/client-auth.js'
import { mergeConfig } from '../helpers/config-tree.js'
import { freePort } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { aliceTokens, form } from '../helpers/store-pair.js'
import { startUpstream } from '../helpers/upstream.js'

async function startAdmin(t: Test) {
  const up = await startUpstream('orders')
  const port = await freePort()
  const config = await adminConfig({ port, upstream: up.url })
  const cfg = await tempConfig(config)
  const rewrite = (change: (c: typeof config) => void): Promise<void> => {
    change(config)
    return writeFile(cfg.file, JSON.stringify(config))
  }
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const checker = await openApiChecker(bin.admin)
  const api = new AdminClient(bin.admin, checker)
  const write = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin'))
  const read = accessTokenOf(await adminToken(bin.url, 'auditor', 'bearward:admin:read'))
  return { bin, api, checker, write, read, rewrite }
}

/**
 * One instance for the tests that can share it, since a start costs about a
 * second of CPU on the suite's two cores: each creates people of its own and
 * the listing test runs first; the one that disables alice runs after those
 * that read her factors and sessions, and enables her again; the refused
 * reload runs last (it leaves the running config as it was, which is what it
 * checks). The Redis test starts its own two.
 */
let shared: ReturnType<typeof startAdmin> | undefined
function sharedAdmin(): ReturnType<typeof startAdmin> {
  shared ??= startAdmin(t)
  return shared
}

async function refresh(bin: RunningBin, refreshToken: string): Promise<Response> {
  return form(`${bin.url}/token`, { grant_type: 'refresh_token', refresh_token: refreshToken }, basic('web', DEMO_SECRET))
}

t.test('people: YAML people listed read-only beside created ones; a username or sub in both is refused', async (t) => {
  const { api, write } = await sharedAdmin()
  const created = await api.call('POST', '/people', { token: write, body: { username: 'carol', claims: { email: 'carol@example.com' } } })
  t.equal(created.status, 201, created.text)
  t.equal(created.headers.get('etag'), '"r1"')
  t.match(created.headers.get('location'), /\/admin\/v1\/people\/carol$/)
  t.same(created.json, {
    id: 'carol',
    username: 'carol',
    sub: 'carol',
    source: 'admin',
    claims: { email: 'carol@example.com' },
    has_password: false,
    disabled: false,
    revision: 1,
    created_at: created.json?.created_at,
    updated_at: created.json?.created_at,
  })
  t.equal((await api.call('POST', '/people', { token: write, body: { username: 'alice' } })).status, 409, 'a YAML username')
  t.equal((await api.call('POST', '/people', { token: write, body: { username: 'al', sub: 'alice' } })).status, 409, 'a YAML sub')
  const again = await api.call('POST', '/people', { token: write, body: { username: 'carol' } })
  t.equal(again.status, 409)
  t.equal(again.json?.type, 'https://bearward.dev/problems/admin/conflict')
  t.equal((await api.call('POST', '/people', { token: write, body: { username: 'dave', claims: { sub: 'x' } } })).status, 400, 'claims never hold sub')
  t.equal((await api.call('POST', '/people', { token: write, body: { username: 'has space' } })).status, 400)
  const list = await api.call('GET', '/people?limit=1', { token: write })
  t.equal(list.status, 200)
  t.same(
    ((list.json?.items ?? []) as Array<{ id: string; source: string }>).map((p) => [p.id, p.source]),
    [['alice', 'config']],
  )
  const rest = await api.call('GET', `/people?limit=5&cursor=${encodeURIComponent(list.json?.next_cursor as string)}`, { token: write })
  t.same(
    ((rest.json?.items ?? []) as Array<{ id: string; source: string }>).map((p) => [p.id, p.source]),
    [
      ['bob', 'config'],
      ['carol', 'admin'],
    ],
    'YAML and stored people in one order by username',
  )
  t.equal(rest.json?.next_cursor, null)
  const clientCursor = await api.call('GET', '/clients?limit=1', { token: write })
  const forged = await api.call('GET', `/people?cursor=${encodeURIComponent(clientCursor.json?.next_cursor as string)}`, { token: write })
  t.equal(forged.status, 400, "another list's cursor")
  const alice = await api.call('GET', '/people/alice', { token: write })
  t.equal(alice.json?.source, 'config')
  t.equal(alice.json?.has_password, true)
  t.notOk(JSON.stringify(alice.json).includes('scrypt'), 'no password hash shown')
  const patchYaml = await api.call('PATCH', '/people/alice', { token: write, body: { claims: {} }, headers: { 'if-match': alice.headers.get('etag') ?? '' } })
  t.equal(patchYaml.status, 409, "a YAML person's claims are read-only")
  t.equal(patchYaml.json?.type, 'https://bearward.dev/problems/admin/read_only')
  t.equal((await api.call('DELETE', '/people/alice', { token: write })).status, 409)
})

t.test('people: claims change with If-Match; of two updates from one ETag exactly one wins', async (t) => {
  const { api, write } = await sharedAdmin()
  await api.call('POST', '/people', { token: write, body: { username: 'cora' } })
  t.equal((await api.call('PATCH', '/people/cora', { token: write, body: { claims: { name: 'C' } } })).status, 428, 'no If-Match')
  const race = await Promise.all(
    ['One', 'Two'].map((name) => api.call('PATCH', '/people/cora', { token: write, body: { claims: { name } }, headers: { 'if-match': '"r1"' } })),
  )
  t.same(race.map((r) => r.status).sort(), [200, 412], 'exactly one wins')
  const winner = race.find((r) => r.status === 200)
  t.equal(winner?.headers.get('etag'), '"r2"')
  const now = await api.call('GET', '/people/cora', { token: write })
  t.same(now.json?.claims, winner?.json?.claims, 'the winner is what is stored')
  t.equal((await api.call('PATCH', '/people/cora', { token: write, body: { claims: {} }, headers: { 'if-match': '"r1"' } })).status, 412, 'stale')
  t.equal((await api.call('DELETE', '/people/cora', { token: write, headers: { 'if-match': '"r1"' } })).status, 412, 'a stale delete')
  t.equal((await api.call('DELETE', '/people/cora', { token: write, headers: { 'if-match': '"r2"' } })).status, 204)
  t.equal((await api.call('GET', '/people/cora', { token: write })).status, 404)
})

t.test('people: a read token reads but cannot disable; an id of another kind is 404', async (t) => {
  const { api, read, write } = await sharedAdmin()
  t.equal((await api.call('GET', '/people/alice', { token: read })).status, 200)
  const denied = await api.call('POST', '/people/alice/disable', { token: read })
  t.equal(denied.status, 403)
  t.match(denied.headers.get('www-authenticate'), /insufficient_scope/)
  t.equal((await api.call('GET', '/people/alice', { token: write })).json?.disabled, false, 'nothing changed')
  for (const id of ['web', 'ops', '.well-known', 'alice%2Fx']) {
    t.equal((await api.call('GET', `/people/${id}`, { token: write })).status, 404, `${id} is no person`)
  }
  t.equal((await api.call('GET', '/people/web/factors', { token: write })).status, 404)
})

t.test('people: password links: 24 h, kept hashed, refused for YAML and disabled people', async (t) => {
  const { api, write } = await sharedAdmin()
  await api.call('POST', '/people', { token: write, body: { username: 'cara' } })
  const link = await api.call('POST', '/people/cara/password-link', { token: write })
  t.equal(link.status, 201, link.text)
  t.match(link.json?.url, /\/set-password\?token=[A-Za-z0-9_-]{43}$/)
  t.ok((link.json?.expires_at as number) - Date.now() / 1000 > 24 * 3600 - 60, 'good for 24 h')
  t.equal((await api.call('POST', '/people/alice/password-link', { token: write })).status, 409, "a YAML person's password is in YAML")
  await api.call('POST', '/people/cara/disable', { token: write })
  t.equal((await api.call('POST', '/people/cara/password-link', { token: write })).status, 409, 'not for a disabled person')
})

t.test('people: factors are listed and removed; sessions end everywhere', async (t) => {
  const { api, write } = await sharedAdmin()
  const factors = await api.call('GET', '/people/alice/factors', { token: write })
  t.same(factors.json, { items: [] })
  t.equal((await api.call('DELETE', '/people/alice/factors/totp', { token: write })).status, 404, 'no such factor')
  const all = await api.call('DELETE', '/people/alice/factors', { token: write })
  t.same(all.json, { sessions_ended: 0, factors_removed: 0 })
  const ended = await api.call('DELETE', '/people/alice/sessions', { token: write })
  t.equal(ended.status, 200)
  t.type(ended.json?.sessions_ended, 'number')
})

t.test('people: disabling a YAML person refuses their sign-in and ends their grants; enabling lets them back', async (t) => {
  const { bin, api, write } = await sharedAdmin()
  const before = await aliceTokens(bin, 'openid orders:read')
  t.type(before.refresh_token, 'string')
  const disabled = await api.call('POST', '/people/alice/disable', { token: write })
  t.equal(disabled.status, 200, disabled.text)
  t.equal(disabled.json?.disabled, true)
  const refreshed = await refresh(bin, before.refresh_token as string)
  t.equal(refreshed.status, 400, 'the refresh token is refused: the grant was revoked')
  t.equal(((await refreshed.json()) as { error: string }).error, 'invalid_grant')
  const orders = await fetch(`${bin.url}/orders`, { headers: { authorization: `Bearer ${before.access_token}` } })
  t.equal(orders.status, 401, 'the access token is refused at the gateway')
  await t.rejects(aliceTokens(bin, 'openid orders:read'), 'she cannot sign in')
  t.equal((await api.call('POST', '/people/alice/enable', { token: write })).json?.disabled, false)
  t.type((await aliceTokens(bin, 'openid orders:read')).access_token, 'string', 'signed in again once enabled')
})

t.test('people on Redis, two instances: a disable on one is refused on the other at once', async (t) => {
  const redis = await startRedis()
  const up = await startUpstream('orders')
  const cfg = await tempConfig('')
  const keyFile = join(cfg.dir, 'signing.jwk')
  await writeFile(keyFile, JSON.stringify(await generatePrivateJwk('ES256', 'k1')))
  const portA = await freePort()
  const store = { url: redis.url, key_prefix: redis.prefix }
  const configOf = async (port: number) => mergeConfig(await adminConfig({ port, upstream: up.url, store }), oneIssuer(portA, keyFile))
  const fileA = join(cfg.dir, 'a.yaml')
  const fileB = join(cfg.dir, 'b.yaml')
  await writeFile(fileA, JSON.stringify(await configOf(portA)))
  await writeFile(fileB, JSON.stringify(await configOf(await freePort())))
  const [a, b] = await Promise.all([startBin(fileA), startBin(fileB)])
  t.teardown(async () => {
    await Promise.all([a.stop(), b.stop()])
    await up.close()
    await redis.stop()
    await cfg.cleanup()
  })
  const apiA = new AdminClient(a.admin, await openApiChecker(a.admin))
  const apiB = new AdminClient(b.admin, await openApiChecker(b.admin))
  const write = accessTokenOf(await adminToken(a.url, 'ops', 'bearward:admin'))
  const created = await apiA.call('POST', '/people', { token: write, body: { username: `p${randomBytes(3).toString('hex')}` } })
  t.equal(created.status, 201)
  const id = created.json?.id as string
  t.equal((await apiB.call('GET', `/people/${id}`, { token: write })).status, 200, 'created on A, read on B')
  t.equal((await apiB.call('POST', '/people', { token: write, body: { username: id } })).status, 409, 'and taken on B')
  // The sign-in pages are A's (public_url): B disables, A refuses.
  const tokens = await aliceTokens(a, 'openid orders:read')
  t.equal((await apiB.call('POST', '/people/alice/disable', { token: write })).status, 200)
  t.equal((await apiA.call('GET', '/people/alice', { token: write })).json?.disabled, true, 'A sees the flag')
  await t.rejects(aliceTokens(a, 'openid orders:read'), 'sign-in on A is refused at once')
  t.equal((await refresh(a, tokens.refresh_token as string)).status, 400, "A refuses the grant's refresh token")
  t.equal((await fetch(`${b.url}/orders`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status, 401, 'B refuses the access token')
})

t.test('people: a created person sets a password through the link, once, then signs in with it', async (t) => {
  const { bin, api, write } = await sharedAdmin()
  await api.call('POST', '/people', { token: write, body: { username: 'dora', claims: { email: 'dora@example.com' } } })
  const link = (await api.call('POST', '/people/dora/password-link', { token: write })).json?.url as string
  const browser = new Browser()
  const page = await browser.get(link)
  t.equal(page.status, 200)
  t.match(page.headers.get('content-security-policy'), /frame-ancestors 'none'/)
  const html = await page.text()
  const [page1] = parseForms(html, link)
  if (page1 === undefined) throw new Error(`no form: ${html}`)
  t.ok('csrf' in page1.fields, 'the form carries a CSRF token')
  const stranger = await fetch(`${bin.url}/set-password`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
    body: new URLSearchParams({ ...page1.fields, password: 'not-my-password', confirm: 'not-my-password' }).toString(),
  })
  t.equal(stranger.status, 403, 'a cross-site post is refused')
  const mismatch = await browser.submit(page1, { password: 'a long enough one', confirm: 'another one' })
  t.equal(mismatch.status, 400, 'the two must match; the link is not spent')
  const set = await browser.submit(page1, { password: 'dora-secret-42', confirm: 'dora-secret-42' })
  t.equal(set.status, 200)
  t.match(await set.text(), /Password set/)
  t.equal((await api.call('GET', '/people/dora', { token: write })).json?.has_password, true)
  const used = await browser.submit(page1, { password: 'an-attacker-pass', confirm: 'an-attacker-pass' })
  t.equal(used.status, 410, 'a used link is refused')
  t.equal((await new Browser().get(link)).status, 410, 'and shows no form')

  const verifier = randomBytes(32).toString('base64url')
  const url = `${bin.url}/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: 'http://127.0.0.1:5555/callback',
    scope: 'openid email',
    state: 's',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })}`
  const cb = await authorizeAsPerson(new Browser(), url, { username: 'dora', password: 'dora-secret-42' })
  const code = cb.searchParams.get('code')
  t.type(code, 'string', 'dora signed in on the sign-in page')
  const tokens = await form(
    `${bin.url}/token`,
    { grant_type: 'authorization_code', code: code ?? '', redirect_uri: 'http://127.0.0.1:5555/callback', code_verifier: verifier },
    basic('web', DEMO_SECRET),
  )
  const body = (await tokens.json()) as { id_token: string }
  const claims = JSON.parse(Buffer.from(body.id_token.split('.')[1] as string, 'base64url').toString('utf8')) as Record<string, unknown>
  t.equal(claims.sub, 'dora')
  t.equal(claims.email, 'dora@example.com', 'her stored claims reach the id_token')
})

t.test('people: a reload that adds a YAML user already created through the API is refused, naming both', async (t) => {
  const { bin, api, write, rewrite } = await sharedAdmin()
  t.equal((await api.call('POST', '/people', { token: write, body: { username: 'cleo' } })).status, 201)
  await rewrite((c) => {
    c.authorization_server.users.push({ ...(c.authorization_server.users[0] as Record<string, unknown>), username: 'cleo', sub: 'cleo-yaml' })
  })
  bin.child.kill('SIGHUP')
  const refused = await bin.waitForLog((e) => String(e.msg).startsWith('config reload refused'))
  t.match(String(refused.msg), /authorization_server\.users\[2\].*username cleo is also a person created through the admin API/)
  const cleo = await api.call('GET', '/people/cleo', { token: write })
  t.equal(cleo.json?.source, 'admin', 'still served by the previous config: cleo is the stored person')
})
