/**
 * Admin-managed clients through `bin/bearward` (issue #42): created with the
 * registration validator, read, changed with If-Match, disabled, deleted,
 * their secret rotated with overlap; every flow finds them (a disabled one is
 * refused at /token and /authorize, its grants revoked); clients listed from
 * every source with `?source=`; grants listed by client. Every answer is
 * validated against the served OpenAPI document; the audit trail is read
 * after each test's changes.
 */
import { createHash, randomBytes } from 'node:crypto'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { accessTokenOf, AdminClient, adminConfig, adminToken, idsOf, itemsOf, openApiChecker } from '../helpers/admin-api.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { authorizeAsPerson, Browser } from '../helpers/browser.js'
import { basic } from '../helpers/client-auth.js'
import { freePort, reply } from '../helpers/http.js'
import { form } from '../helpers/store-pair.js'
import { startUpstream } from '../helpers/upstream.js'

const APP_CALLBACK = 'http://127.0.0.1:5557/callback'

async function startAdmin(t: Test) {
  const up = await startUpstream('orders')
  const port = await freePort()
  const config = await adminConfig({ port, upstream: up.url })
  // Registration on for the last test (registered clients listed); no other test registers a client.
  ;(config.authorization_server as Record<string, unknown>).registration = { enabled: true, scopes: ['orders:read'] }
  const cfg = await tempConfig('')
  const trail = join(cfg.dir, 'audit.jsonl')
  const file = join(cfg.dir, 'gateway.json')
  await writeFile(file, JSON.stringify({ ...config, audit: { destination: `file:${trail}` } }))
  const bin = await startBin(file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const checker = await openApiChecker(bin.admin)
  const api = new AdminClient(bin.admin, checker)
  const write = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin'))
  const read = accessTokenOf(await adminToken(bin.url, 'auditor', 'bearward:admin:read'))
  // The trail as written so far: a line is written when its event is recorded, before the answer (src/audit/trail.ts).
  const events = async () =>
    (await readFile(trail, 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { event: string; actor: Record<string, unknown>; subject: Record<string, unknown>; client_id: string | null })
  return { bin, api, write, read, up, events }
}

/**
 * One instance for the file, since a start costs about a second of CPU on
 * the suite's two cores: each test creates clients of ids of its own (the
 * listing test runs first, the registration test last), and reads the
 * trail's lines about them.
 */
let shared: ReturnType<typeof startAdmin> | undefined
function sharedAdmin(): ReturnType<typeof startAdmin> {
  shared ??= startAdmin(t)
  return shared
}

function clientCredentials(base: string, id: string, secret: string, scope = 'orders:read'): Promise<Response> {
  return form(`${base}/token`, { grant_type: 'client_credentials', scope }, basic(id, secret))
}

/** A person's tokens through the code flow of admin-managed client `id`. */
async function codeFlow(base: string, id: string, secret: string): Promise<{ access_token: string; refresh_token: string }> {
  const verifier = randomBytes(32).toString('base64url')
  const url = `${base}/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: id,
    redirect_uri: APP_CALLBACK,
    scope: 'openid offline_access orders:read',
    state: 's',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })}`
  const cb = await authorizeAsPerson(new Browser(), url, { username: 'alice', password: DEMO_PASSWORD })
  const res = await form(
    `${base}/token`,
    { grant_type: 'authorization_code', code: cb.searchParams.get('code') ?? '', redirect_uri: APP_CALLBACK, code_verifier: verifier },
    basic(id, secret),
  )
  if (res.status !== 200) throw new Error(`code flow: ${res.status} ${await res.text()}`)
  return (await res.json()) as { access_token: string; refresh_token: string }
}

const orders = (base: string, token: string) => reply(fetch(`${base}/orders`, { headers: { authorization: `Bearer ${token}` } }))

t.test('clients: created with the registration rules, never over another client; listed by source', async (t) => {
  const { bin, api, write, read, up, events } = await sharedAdmin()
  const created = await api.call('POST', '/clients', {
    token: write,
    body: { client_id: 'svc', client_name: 'Billing job', grant_types: ['client_credentials'], scope: 'orders:read' },
  })
  t.equal(created.status, 201, created.text)
  t.equal(created.headers.get('etag'), '"r1"')
  t.match(created.headers.get('location'), /\/admin\/v1\/clients\/svc$/)
  t.match(created.json, { id: 'svc', name: 'Billing job', source: 'admin', type: 'confidential', has_secret: true, disabled: false, revision: 1 })
  const secret = String(created.json?.client_secret)
  t.ok(secret.length >= 32, 'the secret is in the 201 answer')
  const got = await api.call('GET', '/clients/svc', { token: read })
  t.equal(got.json?.client_secret, undefined, 'and never again')
  t.notOk(got.text.includes('scrypt'), 'nor its hash')

  const token = await clientCredentials(bin.url, 'svc', secret)
  t.equal(token.status, 200, 'the new client gets a token at /token')
  const access = String(((await token.json()) as { access_token: string }).access_token)
  t.equal((await orders(bin.url, access)).status, 200, 'and the gateway takes it')
  t.equal((await clientCredentials(bin.url, 'svc', secret, 'orders:write')).status, 400, 'a scope it was not given is refused')

  // Refusals: the same id as a YAML client, twice, bad metadata, the admin scopes, a URL id, a read token.
  const seen = up.seen.length
  for (const [body, status, what] of [
    [{ client_id: 'web', grant_types: ['client_credentials'] }, 409, 'a YAML client’s id'],
    [{ client_id: 'svc', grant_types: ['client_credentials'] }, 409, 'an id taken'],
    [{ client_id: 'x1', redirect_uris: ['http://evil.example/cb'] }, 400, 'an http redirect URI off loopback'],
    [{ client_id: 'x2', grant_types: ['password'] }, 400, 'the password grant'],
    [{ client_id: 'x3', grant_types: ['client_credentials'], scope: 'orders:raed' }, 400, 'an unknown scope'],
    [{ client_id: 'x4', grant_types: ['client_credentials'], scope: 'bearward:admin' }, 400, 'the admin scope'],
    [{ client_id: 'https://app.example/meta', grant_types: ['client_credentials'] }, 400, 'a metadata-document URL as id'],
    [{ client_id: 'x5', token_endpoint_auth_method: 'none', grant_types: ['client_credentials'] }, 400, 'a public client with client_credentials'],
  ] as const) {
    const r = await api.call('POST', '/clients', { token: write, body })
    t.equal(r.status, status, `${what}: ${r.text}`)
  }
  const unknownScope = await api.call('POST', '/clients', { token: write, body: { grant_types: ['client_credentials'], scope: 'orders:raed' } })
  t.match(unknownScope.json?.detail, /orders:raed/, 'the refusal names the scope')
  t.equal((await api.call('POST', '/clients', { token: read, body: { grant_types: ['client_credentials'] } })).status, 403, 'a read token cannot create')
  for (const id of ['x1', 'x2', 'x3', 'x4', 'x5']) t.equal((await api.call('GET', `/clients/${id}`, { token: read })).status, 404, `${id} was not stored`)
  t.equal(up.seen.length, seen, 'nothing was forwarded')

  await api.call('POST', '/clients', { token: write, body: { client_id: 'a-first', redirect_uris: [APP_CALLBACK] } })
  t.same(idsOf(await api.call('GET', '/clients?source=admin', { token: read })), ['a-first', 'svc'])
  t.same(idsOf(await api.call('GET', '/clients?source=config', { token: read })), ['auditor', 'cli', 'console', 'ops', 'service', 'web'])
  const first = await api.call('GET', '/clients?limit=3', { token: read })
  t.same(idsOf(first), ['a-first', 'auditor', 'cli'], 'every source in one order by id')
  const rest = await api.call('GET', `/clients?limit=10&cursor=${encodeURIComponent(String(first.json?.next_cursor))}`, { token: read })
  t.same(idsOf(rest), ['console', 'ops', 'service', 'svc', 'web'])
  const adminPage = await api.call('GET', '/clients?source=admin&limit=1', { token: read })
  const crossed = await api.call('GET', `/clients?source=config&cursor=${encodeURIComponent(String(adminPage.json?.next_cursor))}`, { token: read })
  t.equal(crossed.status, 400, 'a cursor of another filter is refused')
  t.equal(crossed.json?.type, 'https://bearward.dev/problems/admin/invalid_cursor')
  t.equal((await api.call('GET', '/clients?source=yaml', { token: read })).status, 400)

  const trail = await events()
  t.ok(
    trail.some((e) => e.event === 'client.created' && e.subject.id === 'svc' && e.actor.kind === 'admin' && e.actor.id === 'ops'),
    'client.created by ops',
  )
  t.notOk(JSON.stringify(trail).includes(secret), 'the secret is not in the trail')
})

t.test('clients: a CIBA-only client is created without the code grant or redirect URIs, and asks at /bc-authorize', async (t) => {
  const { bin, api, write } = await sharedAdmin()
  const CIBA = 'urn:openid:params:grant-type:ciba'
  const created = await api.call('POST', '/clients', {
    token: write,
    body: { client_id: 'desk-agent', client_name: 'Desk agent', grant_types: [CIBA], backchannel_token_delivery_mode: 'poll', scope: 'openid orders:read' },
  })
  t.equal(created.status, 201, created.text)
  const secret = String(created.json?.client_secret)
  const asked = await reply(
    form(`${bin.url}/bc-authorize`, { scope: 'openid orders:read', login_hint: 'alice', binding_message: 'Refund order 7' }, basic('desk-agent', secret)),
  )
  t.equal(asked.status, 200, asked.text)
  t.match(asked.json, { auth_req_id: String, expires_in: Number, interval: Number })
  const polled = await reply(form(`${bin.url}/token`, { grant_type: CIBA, auth_req_id: String(asked.json?.auth_req_id) }, basic('desk-agent', secret)))
  t.equal(polled.json?.error, 'authorization_pending', 'its request waits for alice')

  const ping = await api.call('POST', '/clients', {
    token: write,
    body: {
      client_id: 'ping-agent',
      grant_types: [CIBA],
      backchannel_token_delivery_mode: 'ping',
      backchannel_client_notification_endpoint: 'https://agent.example.com/ciba',
    },
  })
  t.equal(ping.status, 201, ping.text)
  const withCode = await api.call('POST', '/clients', {
    token: write,
    body: { client_id: 'code-agent', grant_types: ['authorization_code', CIBA], backchannel_token_delivery_mode: 'poll' },
  })
  t.equal(withCode.status, 400, 'with the code grant, redirect URIs are still required')
  t.match(withCode.text, /redirect_uris must list at least one redirect URI/)
  t.equal((await api.call('GET', '/clients/code-agent', { token: write })).status, 404, 'and nothing was created')
})

t.test('clients: PATCH needs If-Match; of two updates from one ETag exactly one wins; YAML clients are read-only', async (t) => {
  const { api, write, read } = await sharedAdmin()
  await api.call('POST', '/clients', { token: write, body: { client_id: 'patched', redirect_uris: [APP_CALLBACK], client_name: 'App' } })
  t.equal((await api.call('PATCH', '/clients/patched', { token: write, body: { client_name: 'B' } })).status, 428)
  const race = await Promise.all(
    ['One', 'Two'].map((client_name) => api.call('PATCH', '/clients/patched', { token: write, body: { client_name }, headers: { 'if-match': '"r1"' } })),
  )
  t.same(race.map((r) => r.status).sort(), [200, 412], 'exactly one wins')
  const winner = race.find((r) => r.status === 200)
  t.equal(winner?.headers.get('etag'), '"r2"')
  t.equal((await api.call('GET', '/clients/patched', { token: read })).json?.name, winner?.json?.name, 'the winner is what is stored')
  const bad = await api.call('PATCH', '/clients/patched', {
    token: write,
    body: { redirect_uris: ['http://evil.example/cb'] },
    headers: { 'if-match': '"r2"' },
  })
  t.equal(bad.status, 400, 'an update passes the same validator')
  t.equal((await api.call('GET', '/clients/patched', { token: read })).json?.revision, 2, 'and a refused one changes nothing')
  const method = await api.call('PATCH', '/clients/patched', { token: write, body: { token_endpoint_auth_method: 'none' }, headers: { 'if-match': '"r2"' } })
  t.equal(method.status, 400, 'the auth method cannot change')
  const removed = await api.call('PATCH', '/clients/patched', { token: write, body: { client_name: null }, headers: { 'if-match': '"r2"' } })
  t.equal(removed.json?.name, 'patched', 'null removes a member')
  const web = await api.call('GET', '/clients/web', { token: read })
  const yaml = await api.call('PATCH', '/clients/web', { token: write, body: { client_name: 'x' }, headers: { 'if-match': web.headers.get('etag') ?? '' } })
  t.equal(yaml.status, 409)
  t.equal(yaml.json?.type, 'https://bearward.dev/problems/admin/read_only')
  t.equal((await api.call('DELETE', '/clients/web', { token: write })).status, 409)
  t.equal((await api.call('POST', '/clients/web/disable', { token: write })).status, 409)
})

t.test('clients: a rotated secret works at once, the previous one until previous_expires_at', async (t) => {
  const { bin, api, write, read, events } = await sharedAdmin()
  const created = await api.call('POST', '/clients', {
    token: write,
    body: { client_id: 'rotating', grant_types: ['client_credentials'], scope: 'orders:read' },
  })
  const first = String(created.json?.client_secret)
  const rotated = await api.call('POST', '/clients/rotating/secrets', { token: write, headers: { 'if-match': '"r1"' } })
  t.equal(rotated.status, 200, rotated.text)
  t.equal(rotated.headers.get('etag'), '"r2"')
  const second = String(rotated.json?.client_secret)
  const overlap = Number(rotated.json?.previous_expires_at) - Math.floor(Date.now() / 1000)
  t.ok(overlap > 24 * 3600 - 60 && overlap <= 24 * 3600, 'the previous secret works 24 h by default')
  t.equal((await clientCredentials(bin.url, 'rotating', second)).status, 200, 'the new secret works')
  t.equal((await clientCredentials(bin.url, 'rotating', first)).status, 200, 'the previous one still does')
  t.equal((await api.call('GET', '/clients/rotating', { token: read })).json?.previous_secret_expires_at, rotated.json?.previous_expires_at)
  t.equal((await api.call('POST', '/clients/rotating/secrets', { token: write, headers: { 'if-match': '"r1"' } })).status, 412, 'a stale rotation')
  const tooLong = await api.call('POST', '/clients/rotating/secrets', {
    token: write,
    body: { previous_expires_at: Math.floor(Date.now() / 1000) + 2 * 86400 },
  })
  t.equal(tooLong.status, 400, 'no more than 24 h of overlap')
  const longPast = await api.call('POST', '/clients/rotating/secrets', { token: write, body: { previous_expires_at: Math.floor(Date.now() / 1000) - 3600 } })
  t.equal(longPast.status, 400, 'an hour ago is refused')
  // "End it now" from a clock 10 s behind the server's (or sent across a second boundary): still now.
  const sent = Math.floor(Date.now() / 1000) - 10
  const now = await api.call('POST', '/clients/rotating/secrets', { token: write, body: { previous_expires_at: sent } })
  t.equal(now.status, 200, 'an overlap of nothing: the previous secret stops now')
  t.ok(Number(now.json?.previous_expires_at) > sent, 'a time just past is taken as now')
  const third = String(now.json?.client_secret)
  t.equal((await clientCredentials(bin.url, 'rotating', third)).status, 200)
  t.equal((await clientCredentials(bin.url, 'rotating', second)).status, 401, 'the previous secret, its overlap over, is refused')
  t.equal((await clientCredentials(bin.url, 'rotating', first)).status, 401, 'and the first is long gone')
  t.equal((await api.call('POST', '/clients/rotating/secrets', { token: read })).status, 403, 'a read token cannot rotate')
  const yaml = await api.call('POST', '/clients/web/secrets', { token: write })
  t.equal(yaml.status, 409, 'a YAML client’s secret lives in YAML')
  t.equal(yaml.json?.type, 'https://bearward.dev/problems/admin/read_only')
  await api.call('POST', '/clients', { token: write, body: { client_id: 'pub', token_endpoint_auth_method: 'none', redirect_uris: [APP_CALLBACK] } })
  t.equal((await api.call('POST', '/clients/pub/secrets', { token: write })).status, 409, 'a public client has no secret to rotate')
  const trail = await events()
  t.equal(trail.filter((e) => e.event === 'client.secret_rotated' && e.subject.id === 'rotating').length, 2)
  for (const s of [first, second, third]) t.notOk(JSON.stringify(trail).includes(s), 'no secret in the trail')
})

t.test('clients: a disabled client gets no token and no authorization; its grants end; grants listed by client', async (t) => {
  const { bin, api, write, read, up, events } = await sharedAdmin()
  const app = await api.call('POST', '/clients', {
    token: write,
    body: { client_id: 'app', redirect_uris: [APP_CALLBACK], grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access orders:read' },
  })
  const secret = String(app.json?.client_secret)
  const tokens = await codeFlow(bin.url, 'app', secret)
  t.equal((await orders(bin.url, tokens.access_token)).status, 200, 'the code flow of an admin-managed client works')
  const byClient = await api.call('GET', '/grants?client=app', { token: read })
  t.equal(byClient.status, 200, byClient.text)
  t.match(itemsOf(byClient), [{ person: 'alice', client_id: 'app' }], 'its grant, listed without naming the person')
  t.equal(itemsOf(await api.call('GET', '/grants?client=web', { token: read })).length, 0, 'another client’s list is its own')

  const disabled = await api.call('POST', '/clients/app/disable', { token: write })
  t.equal(disabled.status, 200)
  t.equal(disabled.json?.disabled, true)
  const seen = up.seen.length
  t.equal((await orders(bin.url, tokens.access_token)).status, 401, 'its access token is refused at once')
  t.equal(up.seen.length, seen, 'and nothing reaches the upstream')
  t.equal(
    (await form(`${bin.url}/token`, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, basic('app', secret))).status,
    401,
    '/token refuses it',
  )
  const authorize = await fetch(
    `${bin.url}/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'app', redirect_uri: APP_CALLBACK, scope: 'openid', code_challenge: 'x'.repeat(43), code_challenge_method: 'S256' })}`,
    { redirect: 'manual' },
  )
  t.equal(authorize.status, 400, '/authorize refuses it, without redirecting')
  t.same(itemsOf(await api.call('GET', '/grants?client=app', { token: read })), [], 'no grant is left')
  t.equal((await api.call('GET', '/clients/app', { token: read })).json?.disabled, true, 'the API still shows it')
  t.match(
    itemsOf(await api.call('GET', '/clients?source=admin', { token: read })).filter((c) => c.id === 'app'),
    [{ id: 'app', disabled: true }],
    'and lists it, disabled',
  )

  t.equal((await api.call('POST', '/clients/app/enable', { token: write })).json?.disabled, false)
  const again = await codeFlow(bin.url, 'app', secret)
  t.equal((await orders(bin.url, again.access_token)).status, 200, 'enabled again, it works for new grants')

  t.equal((await api.call('DELETE', '/clients/app', { token: write, headers: { 'if-match': '"r1"' } })).status, 412, 'a stale delete')
  t.equal((await api.call('DELETE', '/clients/app', { token: write })).status, 204)
  t.equal((await api.call('GET', '/clients/app', { token: read })).status, 404)
  t.equal((await orders(bin.url, again.access_token)).status, 401, 'a deleted client’s grants are revoked')
  t.equal((await form(`${bin.url}/token`, { grant_type: 'refresh_token', refresh_token: again.refresh_token }, basic('app', secret))).status, 401)

  const trail = await events()
  const about = (name: string) => trail.filter((e) => e.event === name && e.client_id === 'app').length
  t.equal(about('client.updated'), 2, 'disable and enable')
  t.equal(about('client.deleted'), 1)
  t.ok(about('grant.revoked') >= 2, 'each grant ended is audited')
})

t.test('clients: a registered client is listed with source registration, and its id cannot be taken', async (t) => {
  const { bin, api, write, read } = await sharedAdmin()
  const registered = await reply(
    fetch(`${bin.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: [APP_CALLBACK], client_name: 'Self-made', token_endpoint_auth_method: 'none' }),
    }),
  )
  t.equal(registered.status, 201, registered.text)
  const id = String(registered.json?.client_id)
  t.match(itemsOf(await api.call('GET', '/clients?source=registration', { token: read })), [{ id, source: 'registration', name: 'Self-made' }])
  t.ok(idsOf(await api.call('GET', '/clients?limit=200', { token: read })).includes(id), 'and in the whole list')
  const taken = await api.call('POST', '/clients', { token: write, body: { client_id: id, grant_types: ['client_credentials'] } })
  t.equal(taken.status, 409, 'a registered client’s id is refused')
  const change = await api.call('POST', `/clients/${encodeURIComponent(id)}/secrets`, { token: write })
  t.equal(change.status, 409, 'a registered client is not managed here')
  t.equal(change.json?.type, 'https://bearward.dev/problems/admin/read_only')
})
