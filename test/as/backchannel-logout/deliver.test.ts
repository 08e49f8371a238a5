import t from 'tap'
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose'
import { BACKCHANNEL_LOGOUT_EVENT } from '../../../src/as/backchannel-logout/logout-token.js'
import { FIRST_BACKOFF_MS } from '../../../src/as/backchannel-logout/deliver.js'
import { Browser, authParams, authorizeAs, authorizeUrl, formWith, frontYaml, get, parseForms, pkce, startFront, type Front } from '../../helpers/as-front.js'
import { postForm, reply } from '../../helpers/http.js'
import { startUpstream } from '../../helpers/upstream.js'

/**
 * OpenID Connect Back-Channel Logout 1.0 as the provider: id_tokens carry `sid`; when a session
 * ends (RP-initiated logout, "Sign out everywhere"), each client that received an id_token in it
 * and has a `backchannel_logout_uri` gets a logout token, checked here claim by claim against
 * section 2.4 with jose and our JWKS, by a real HTTP receiver. Failures are retried with backoff;
 * deliveries are counted.
 */

const RP_CALLBACK = 'https://rp.example.com/cb'

/** A receiver that answers each POST with the next status of `statuses` (then 200). */
async function startReceiver(statuses: number[] = []): Promise<Awaited<ReturnType<typeof startUpstream>>> {
  const queue = [...statuses]
  return startUpstream('rp', (_req, res) => {
    res.writeHead(queue.shift() ?? 200, { 'cache-control': 'no-store' })
    res.end()
  })
}

async function startWithReceiver(receiverUrl: string, sessionRequired = true): Promise<Front> {
  const yaml = await frontYaml({
    clientsExtra: `    - client_id: rp
      name: Relying Party
      type: public
      redirect_uris: [${RP_CALLBACK}]
      grant_types: [authorization_code]
      scopes: [openid, profile]
      backchannel_logout_uri: ${receiverUrl}/logout/backchannel
      backchannel_logout_session_required: ${sessionRequired}
`,
  })
  return startFront(yaml)
}

/** A person signs in for `rp` and the code becomes tokens: the id_token, and the browser. */
async function idTokenFor(f: Front, b = new Browser(), username = 'alice', password?: string): Promise<{ b: Browser; idToken: string }> {
  const { verifier, challenge } = pkce()
  const cb = await authorizeAs(
    b,
    authorizeUrl(f, authParams({ client_id: 'rp', redirect_uri: RP_CALLBACK, scope: 'openid', code_challenge: challenge })),
    password === undefined ? { username } : { username, password },
  )
  const code = cb.searchParams.get('code')
  if (code === null) throw new Error(`no code: ${cb.toString()}`)
  const res = await fetch(`${f.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: RP_CALLBACK, code_verifier: verifier, client_id: 'rp' }),
  })
  const body = (await res.json()) as { id_token?: string }
  if (body.id_token === undefined) throw new Error(`no id_token: ${res.status}`)
  return { b, idToken: body.id_token }
}

async function jwksOf(f: Front): Promise<ReturnType<typeof createLocalJWKSet>> {
  return createLocalJWKSet((await (await fetch(`${f.url}/jwks.json`)).json()) as JSONWebKeySet)
}

const logoutTokenOf = (body: string): string => new URLSearchParams(body).get('logout_token') ?? ''

t.test('server metadata says back-channel logout, with sessions, is supported', async (t) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const meta = (await (await fetch(`${f.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>
  t.equal(meta.backchannel_logout_supported, true)
  t.equal(meta.backchannel_logout_session_supported, true)
  t.ok((meta.claims_supported as string[]).includes('sid'), 'sid is among the claims')
})

t.test('RP-initiated logout: the client gets a logout token that passes every check of section 2.4', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const f = await startWithReceiver(receiver.url)
  t.teardown(() => f.close())
  const { b, idToken } = await idTokenFor(f)
  const id = decodeJwt(idToken)
  t.type(id.sid, 'string', 'the id_token carries sid')
  t.ok((id.sid as string).length >= 32, 'a random sid')
  t.equal(receiver.seen.length, 0, 'nothing sent while the session lives')

  const out = await b.get(`${f.url}/logout?${new URLSearchParams({ id_token_hint: idToken, client_id: 'rp' })}`)
  t.equal(out.status, 200, 'signed out (the hint names this person)')
  await f.as.backchannelLogout.runOnce()
  t.equal(receiver.seen.length, 1, 'one POST')
  const seen = receiver.seen[0]
  t.equal(seen?.method, 'POST')
  t.equal(seen?.url, '/logout/backchannel')
  t.equal(seen?.headers['content-type'], 'application/x-www-form-urlencoded')
  t.same([...new URLSearchParams(seen?.body).keys()], ['logout_token'], 'the body is logout_token alone')
  const token = logoutTokenOf(seen?.body ?? '')
  t.equal(decodeProtectedHeader(token).typ, 'logout+jwt', 'explicitly typed')
  const { payload } = await jwtVerify(token, await jwksOf(f), {
    issuer: f.issuer,
    audience: 'rp',
    typ: 'logout+jwt',
    currentDate: new Date(f.clock.now()),
  })
  t.equal(payload.sub, id.sub, 'sub as in the id_token')
  t.equal(payload.sid, id.sid, 'sid as in the id_token')
  t.same(payload.events, { [BACKCHANNEL_LOGOUT_EVENT]: {} }, 'events holds the back-channel-logout member')
  t.notOk('nonce' in payload, 'no nonce (2.4: MUST NOT)')
  t.type(payload.jti, 'string')
  t.ok(typeof payload.exp === 'number' && typeof payload.iat === 'number' && payload.exp > payload.iat && payload.exp - payload.iat <= 300, 'a short exp')
  t.equal(f.as.metrics.backchannelLogouts.get({ outcome: 'delivered' }), 1, 'counted')
  const logged = JSON.stringify(f.logs)
  t.notOk(logged.includes(token), 'the token is never logged')
  t.ok(
    f.logs.some((l) => l.event === 'backchannel_logout_delivered' && l.client_id === 'rp'),
    'the delivery is logged',
  )
})

t.test('a receiver failing twice gets the same token id a third time, after the backoff', async (t) => {
  const receiver = await startReceiver([500, 503])
  t.teardown(() => receiver.close())
  const f = await startWithReceiver(receiver.url)
  t.teardown(() => f.close())
  const { b, idToken } = await idTokenFor(f)
  await b.get(`${f.url}/logout?${new URLSearchParams({ id_token_hint: idToken, client_id: 'rp' })}`)
  await f.as.backchannelLogout.runOnce()
  t.equal(receiver.seen.length, 1, 'tried at once; refused')
  await f.as.backchannelLogout.runOnce()
  t.equal(receiver.seen.length, 1, 'not again before the backoff')
  f.clock.advance(FIRST_BACKOFF_MS)
  await f.as.backchannelLogout.runOnce()
  t.equal(receiver.seen.length, 2, 'again after 1 s; refused')
  f.clock.advance(FIRST_BACKOFF_MS)
  await f.as.backchannelLogout.runOnce()
  t.equal(receiver.seen.length, 2, 'the backoff doubled')
  f.clock.advance(FIRST_BACKOFF_MS)
  await f.as.backchannelLogout.runOnce()
  t.equal(receiver.seen.length, 3, 'a third time after 2 s more; accepted')
  f.clock.advance(60_000)
  await f.as.backchannelLogout.runOnce()
  t.equal(receiver.seen.length, 3, 'delivered: never again')
  const jtis = receiver.seen.map((s) => decodeJwt(logoutTokenOf(s.body)).jti)
  t.equal(new Set(jtis).size, 1, 'one delivery, one jti')
  t.equal(f.as.metrics.backchannelLogouts.get({ outcome: 'failed' }), 2)
  t.equal(f.as.metrics.backchannelLogouts.get({ outcome: 'delivered' }), 1)
})

t.test('a receiver that never answers 2xx is given up after a bounded time, counted as dropped', async (t) => {
  const receiver = await startReceiver(Array.from({ length: 100 }, () => 500))
  t.teardown(() => receiver.close())
  const f = await startWithReceiver(receiver.url)
  t.teardown(() => f.close())
  const { b, idToken } = await idTokenFor(f)
  await b.get(`${f.url}/logout?${new URLSearchParams({ id_token_hint: idToken, client_id: 'rp' })}`)
  for (let i = 0; i < 30; i++) {
    await f.as.backchannelLogout.runOnce()
    f.clock.advance(60_000)
  }
  t.ok(receiver.seen.length >= 5 && receiver.seen.length <= 16, `tried a bounded number of times: ${receiver.seen.length}`)
  t.equal(f.as.metrics.backchannelLogouts.get({ outcome: 'dropped' }), 1, 'then dropped, counted')
  t.equal(await f.store.deliveries.claim('bcl', 1000, 10).then((j) => j.length), 0, 'nothing left queued')
})

t.test('"Sign out everywhere" sends one logout token per session, each with its own sid', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const f = await startWithReceiver(receiver.url)
  t.teardown(() => f.close())
  const laptop = await idTokenFor(f)
  const phone = await idTokenFor(f)
  const sids = [decodeJwt(laptop.idToken).sid, decodeJwt(phone.idToken).sid]
  t.not(sids[0], sids[1], 'two sessions, two sids')
  const page = await laptop.b.get(`${f.url}/account`)
  const form = parseForms(await page.text(), `${f.url}/account`).find((x) => x.buttons.some((b) => b.name === 'sign_out'))
  if (form === undefined) throw new Error('no "Sign out everywhere" form')
  const res = await reply(postForm(form.action, { ...form.fields, sign_out: 'everywhere' }, { cookie: cookieOf(laptop.b), origin: f.issuer }))
  t.equal(res.status, 200, 'the page answers without waiting for the client')
  await f.as.backchannelLogout.runOnce()
  const got = receiver.seen.map((s) => decodeJwt(logoutTokenOf(s.body)).sid).sort()
  t.same(got, [...sids].sort(), 'one token for each ended session')
})

t.test('a session in which the client got no id_token sends it nothing', async (t) => {
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const f = await startWithReceiver(receiver.url)
  t.teardown(() => f.close())
  const b = new Browser()
  const login = await b.get(`${f.url}/account`)
  await b.submit(formWith(await login.text(), `${f.url}/account`, 'password'), { username: 'alice', password: 'alice: correct horse battery staple' })
  t.match((await get(`${f.url}/account`, cookieOf(b))).text, /Your account/)
  const logout = formWith((await get(`${f.url}/account`, cookieOf(b))).text, `${f.url}/account`, 'decision')
  await reply(postForm(logout.action, { ...logout.fields, decision: 'logout' }, { cookie: cookieOf(b), origin: f.issuer }))
  await f.as.backchannelLogout.runOnce()
  t.equal(receiver.seen.length, 0)
})

function cookieOf(b: Browser): string {
  return [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
}
