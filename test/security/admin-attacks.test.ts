/**
 * The attacker's pass on issue #42's admin surfaces, through `bin/bearward`:
 * a leaver racing their own disable (a code or device code got just before
 * it), admin tokens kept after a reload takes their holder out of
 * `admin_api`, a read token trying every way to write, ids and paths of
 * another kind. Each test sends the attack and checks the refusal and that
 * nothing was stored.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { verifyAuditText } from '../../src/audit/chain.js'
import { accessTokenOf, AdminClient, adminConfig, adminToken, itemsOf, openApiChecker, personToken, WEB_CALLBACK } from '../helpers/admin-api.js'
import { authorizeAs, Browser, parseForms, pkce } from '../helpers/as-front.js'
import { DEMO_PASSWORD, DEMO_SECRET } from '../helpers/as-config.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { basic } from '../helpers/client-auth.js'
import { type DeviceStart, pollOnce, startDevice } from '../helpers/device-client.js'
import { freePort, postForm, reply } from '../helpers/http.js'
import { startUpstream } from '../helpers/upstream.js'

async function startAdmin(t: Test, o: { audit?: boolean } = {}) {
  const up = await startUpstream('orders')
  const port = await freePort()
  const config = await adminConfig({ port, upstream: up.url })
  // The trail, beside the config file: `audit.jsonl`.
  if (o.audit === true) Object.assign(config, { audit: { destination: 'file:audit.jsonl' } })
  const cfg = await tempConfig(config)
  const auditFile = join(cfg.dir, 'audit.jsonl')
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  /** Change the config file and reload; resolves once the reload is logged. */
  const reload = async (change: (c: typeof config) => void): Promise<void> => {
    change(config)
    await writeFile(cfg.file, JSON.stringify(config))
    const seen = bin.lines.length
    bin.child.kill('SIGHUP')
    await bin.waitForLog((e) => String(e.msg) === 'config reloaded' && bin.lines.length > seen)
  }
  const api = new AdminClient(bin.admin, await openApiChecker(bin.admin))
  const write = accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin'))
  const read = accessTokenOf(await adminToken(bin.url, 'auditor', 'bearward:admin:read'))
  return { bin, up, api, write, read, reload, auditFile }
}

/**
 * One instance, its trail on, for the leaver's races and the trail's attacks,
 * since a start costs about a second of CPU on the suite's two cores: the
 * leaver's tests enable bob again, and the trail's tests then read every line
 * both wrote. Each reload test starts its own: a reload changes the config
 * every later test would see.
 */
let shared: ReturnType<typeof startAdmin> | undefined
function sharedAdmin(): ReturnType<typeof startAdmin> {
  shared ??= startAdmin(t, { audit: true })
  return shared
}

/** bob through /authorize for the `web` client: the code, not yet redeemed. */
async function bobsCode(base: string): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkce()
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: WEB_CALLBACK,
    scope: 'openid orders:read',
    state: 's1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })
  const back = await authorizeAs(new Browser(), `${base}/authorize?${params}`, { username: 'bob', password: DEMO_PASSWORD })
  const code = back.searchParams.get('code')
  if (code === null) throw new Error(`no code: ${back}`)
  return { code, verifier }
}

/** bob opens verification_uri_complete, signs in and allows. */
async function approveAsBob(base: string, start: DeviceStart): Promise<void> {
  const browser = new Browser()
  const url = start.verification_uri_complete
  let { res, url: at } = await browser.follow(await browser.get(url), url, base)
  for (let step = 0; step < 4; step++) {
    const forms = parseForms(await res.text(), at).filter((f) => f.method === 'POST')
    const login = forms.find((f) => 'password' in f.fields)
    const consent = forms.find((f) => f.buttons.some((b) => b.name === 'decision'))
    if (consent) {
      const done = await browser.submit(consent, { decision: 'allow' })
      if (done.status !== 200) throw new Error(`approval answered ${done.status}`)
      return
    }
    if (!login) throw new Error(`no login or confirmation form (status ${res.status})`)
    ;({ res, url: at } = await browser.follow(await browser.submit(login, { username: 'bob', password: DEMO_PASSWORD }), at, base))
  }
  throw new Error('device approval did not finish')
}

t.test('a leaver racing their disable', async (t) => {
  const { bin, api, write, read } = await sharedAdmin()

  t.test('a code issued before the person was disabled is refused at /token: no grant, no token', async (t) => {
    const { code, verifier } = await bobsCode(bin.url)
    t.equal((await api.call('POST', '/people/bob/disable', { token: write })).status, 200)
    const r = await reply(
      postForm(
        `${bin.url}/token`,
        { grant_type: 'authorization_code', code, redirect_uri: WEB_CALLBACK, code_verifier: verifier },
        { authorization: basic('web', DEMO_SECRET) },
      ),
    )
    t.equal(r.status, 400, r.text)
    t.equal(r.json?.error, 'invalid_grant')
    t.notOk('access_token' in (r.json ?? {}), 'no access token')
    t.notOk('refresh_token' in (r.json ?? {}), 'no refresh token')
    t.same(itemsOf(await api.call('GET', '/grants?person=bob', { token: read })), [], 'no grant was stored')
    t.equal((await api.call('POST', '/people/bob/enable', { token: write })).status, 200)
  })

  t.test('a device code approved before the person was disabled is refused when polled', async (t) => {
    const start = await startDevice(bin.url)
    await approveAsBob(bin.url, start)
    t.equal((await api.call('POST', '/people/bob/disable', { token: write })).status, 200)
    const answer = await pollOnce(bin.url, start)
    t.equal(answer.status, 400, JSON.stringify(answer.body))
    t.equal(answer.body.error, 'invalid_grant')
    t.notOk('access_token' in answer.body, 'no access token')
    t.same(itemsOf(await api.call('GET', '/grants?person=bob', { token: read })), [], 'no grant was stored')
    t.equal((await api.call('POST', '/people/bob/enable', { token: write })).status, 200)
  })
})

t.test('admin tokens outliving their holder’s place in admin_api', async (t) => {
  t.test('an admin client taken out of admin_api.clients by a reload: its live token is refused at once', async (t) => {
    const { bin, api, write, reload } = await startAdmin(t)
    t.equal((await api.call('GET', '/clients', { token: write })).status, 200, 'works before the reload')
    await reload((c) => {
      Object.assign(c.admin_api as object, { clients: ['auditor', 'console'] })
    })
    const r = await api.call('GET', '/clients', { token: write })
    t.equal(r.status, 401, r.text)
    t.match(r.headers.get('www-authenticate'), /error="invalid_token"/)
    const revoke = await api.call('POST', '/tokens/revoke', { token: write, body: { jti: 'x' } })
    t.equal(revoke.status, 401, 'nor can it write')
    t.equal((await adminToken(bin.url, 'ops', 'bearward:admin')).json?.error, 'invalid_scope', 'and it gets no new one')
  })

  t.test('a person taken out of admin_api.people by a reload: their live admin token is refused at once', async (t) => {
    const { bin, api, reload } = await startAdmin(t)
    const alice = accessTokenOf(
      await personToken(bin.url, { client: 'console', username: 'alice', scope: 'openid bearward:admin', resource: `${bin.url}/admin/v1` }),
    )
    t.equal((await api.call('GET', '/people', { token: alice })).status, 200, 'works before the reload')
    await reload((c) => {
      Object.assign(c.admin_api as object, { people: [] })
    })
    const r = await api.call('GET', '/people', { token: alice })
    t.equal(r.status, 401, r.text)
    t.equal((await api.call('POST', '/people/bob/disable', { token: alice })).status, 401, 'nor can she write')
    const bob = await api.call('GET', '/people/bob', { token: accessTokenOf(await adminToken(bin.url, 'ops', 'bearward:admin')) })
    t.equal(bob.json?.disabled, false, 'bob was not disabled')
  })
})

t.test('the audit trail under attack', async (t) => {
  const { bin, api, write, auditFile } = await sharedAdmin()
  const person = await personToken(bin.url, { client: 'console', username: 'alice', scope: 'openid bearward:admin', resource: `${bin.url}/admin/v1` })
  const refreshToken = person.json?.refresh_token
  if (typeof refreshToken !== 'string') throw new Error(`no refresh token: ${person.text}`)

  t.test('a refresh token pasted where a jti goes is 400 and never reaches the trail', async (t) => {
    const r = await api.call('POST', '/tokens/revoke', { token: write, body: { jti: refreshToken } })
    t.equal(r.status, 400, r.text)
    t.equal(r.json?.type, 'https://bearward.dev/problems/admin/invalid_request')
    const trail = await readFile(auditFile, 'utf8')
    t.notOk(trail.includes(refreshToken), 'the refresh token is in no line')
    t.notOk(trail.includes('token.revoked'), 'no token.revoked was recorded')
  })

  t.test('a user agent written to inject JSON into a line stays one field, and the chain verifies', async (t) => {
    const forged = 'x","event":"person.deleted","subject":{"kind":"person","id":"alice"},"y":"\\'
    const r = await reply(fetch(`${bin.admin}/admin/v1/people`, { headers: { 'user-agent': forged, authorization: 'Bearer nope' } }))
    t.equal(r.status, 401)
    const lines = (await readFile(auditFile, 'utf8')).trim().split('\n')
    const events = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    t.notOk(
      events.some((e) => e.event === 'person.deleted'),
      'no forged event',
    )
    const denied = events.filter((e) => e.event === 'admin.denied')
    t.ok(
      denied.some((e) => e.user_agent === forged),
      'the user agent is kept as one string',
    )
    // The verifier `bearward audit verify` runs (test/e2e/audit-trail.test.ts runs the command), here in-process.
    const verified = verifyAuditText(await readFile(auditFile, 'utf8'))
    t.equal(verified.ok, true, JSON.stringify(verified))
  })

  t.test('no secret, token, code or password in any line of the whole run', async (t) => {
    const trail = await readFile(auditFile, 'utf8')
    const secrets = [DEMO_SECRET, DEMO_PASSWORD, write, refreshToken, String(person.json?.access_token), String(person.json?.id_token)]
    for (const s of secrets) t.notOk(trail.includes(s), `not in the trail: ${s.slice(0, 12)}…`)
  })
})
