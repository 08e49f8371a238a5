import t from 'tap'
import { decodeJwt } from 'jose'
import { basic, startAs, tokensFor } from '../../helpers/as-back.js'
import { postForm, reply, type Reply } from '../../helpers/http.js'
import { basic as basicAuth } from '../../helpers/client-auth.js'
import { approvalIdOf, auth, bcAuthorize, CIBA, cibaClients, decide, poll, startReceiver } from '../../helpers/ciba.js'

/**
 * OpenID CIBA Core 1.0 at /bc-authorize and the `urn:openid:params:grant-type:ciba` grant, on the
 * served authorization server with a ManualClock. The person's decision is made through the
 * approval desk (what the approval page's form calls); the page itself is driven in
 * test/e2e/ciba.test.ts.
 */

t.test('CIBA', async (t) => {
  const receiver = await startReceiver()
  t.teardown(receiver.close)
  const h = await startAs({ clientsExtra: await cibaClients(receiver.url), asExtra: '  ciba: { ttl: 120s, interval: 5s }' })
  t.teardown(() => h.close())
  const wait = (sec: number): void => h.clock.advance(sec * 1000)
  const pendingOf = async (sub = 'alice'): Promise<number> => (await h.as.approvals.listForPerson(sub)).filter((a) => a.status === 'pending').length

  let agentIdToken = ''

  t.test('metadata: the endpoint, poll and ping, no user_code, the grant', async (t) => {
    const r = await reply(fetch(`${h.url}/.well-known/openid-configuration`))
    t.equal(r.json?.backchannel_authentication_endpoint, `${h.issuer}/bc-authorize`)
    t.same(r.json?.backchannel_token_delivery_modes_supported, ['poll', 'ping'])
    t.equal(r.json?.backchannel_user_code_parameter_supported, false)
    t.ok((r.json?.grant_types_supported as string[] | undefined)?.includes(CIBA))
  })

  t.test('poll mode: pending, slow_down, approved → tokens once for the person, grant recorded', async (t) => {
    const started = await bcAuthorize(h, { scope: 'openid email orders:read', login_hint: 'alice', binding_message: 'Order 42: pay 500 EUR' })
    t.equal(started.status, 200, started.text)
    t.equal(started.headers.get('cache-control'), 'no-store')
    t.same(Object.keys(started.json ?? {}).sort(), ['auth_req_id', 'expires_in', 'interval'])
    t.equal(started.json?.expires_in, 120)
    t.equal(started.json?.interval, 5)
    const authReqId = String(started.json?.auth_req_id)
    const approval = await h.as.approvals.get(approvalIdOf(authReqId))
    t.equal(approval?.kind, 'ciba')
    t.equal(approval?.sub, 'alice')
    t.same(approval?.subject, {
      kind: 'ciba',
      scopes: ['openid', 'email', 'orders:read'],
      bindingMessage: 'Order 42: pay 500 EUR',
      authorizationDetailsJson: null,
    })
    t.notOk(JSON.stringify(approval).includes(authReqId.split('.')[1] as string), 'the secret part of auth_req_id is not stored')

    const pending = await poll(h, authReqId)
    t.equal(pending.status, 400)
    t.equal(pending.json?.error, 'authorization_pending')
    const fast = await poll(h, authReqId)
    t.equal(fast.json?.error, 'slow_down', 'polled sooner than the interval')
    wait(5)
    t.equal((await poll(h, authReqId)).json?.error, 'authorization_pending', 'the interval respected')
    wait(5)
    t.equal((await poll(h, authReqId)).json?.error, 'slow_down', 'after a slow_down the interval is 10 s')
    wait(15)

    await decide(h, authReqId, 'approved')
    const ok = await poll(h, authReqId)
    t.equal(ok.status, 200, ok.text)
    t.equal(ok.json?.scope, 'openid email orders:read')
    t.type(ok.json?.refresh_token, 'string', 'agent holds the refresh_token grant')
    const at = decodeJwt(String(ok.json?.access_token))
    t.equal(at.sub, 'alice')
    t.equal(at.client_id, 'agent')
    t.equal(at.acr, 'mfa', "the deciding session's acr")
    agentIdToken = String(ok.json?.id_token)
    const id = decodeJwt(agentIdToken)
    t.equal(id.sub, 'alice')
    t.equal(id.aud, 'agent')
    t.equal(id.email, 'alice@example.com')
    t.equal(h.metrics.tokensIssued.get({ grant: 'ciba' }), 1)
    const allowances = await h.store.allowances.list('alice')
    t.ok(
      allowances.some((a) => a.clientId === 'agent'),
      'the grant is on the account page',
    )

    wait(15)
    const again = await poll(h, authReqId)
    t.equal(again.json?.error, 'invalid_grant', 'tokens are issued once')
  })

  t.test('denied: access_denied', async (t) => {
    const started = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice' })
    const authReqId = String(started.json?.auth_req_id)
    await decide(h, authReqId, 'denied')
    const r = await poll(h, authReqId)
    t.equal(r.status, 400)
    t.equal(r.json?.error, 'access_denied')
  })

  t.test('expiry: expired_token, requested_expiry shortens it', async (t) => {
    const started = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', requested_expiry: '30' })
    t.equal(started.json?.expires_in, 30)
    const longer = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', requested_expiry: '100000' })
    t.equal(longer.json?.expires_in, 120, 'never beyond ciba.ttl')
    wait(31)
    const r = await poll(h, String(started.json?.auth_req_id))
    t.equal(r.json?.error, 'expired_token')
    t.equal(
      await h.as.approvals.decide(
        approvalIdOf(String(started.json?.auth_req_id)),
        'approved',
        { sub: 'alice', acr: 'pwd', address: null, userAgent: null },
        60,
      ),
      null,
      'an expired request cannot be approved',
    )
  })

  t.test("another client's auth_req_id, a forged or unknown one: invalid_grant, nothing changes", async (t) => {
    const started = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice' })
    const authReqId = String(started.json?.auth_req_id)
    await decide(h, authReqId, 'approved')
    const stolen = await poll(h, authReqId, 'pinger')
    t.equal(stolen.json?.error, 'invalid_grant')
    t.equal((await poll(h, authReqId, 'pinger')).json?.error, 'invalid_grant', 'no slow_down clock for the thief')
    const [id, secret, exp] = authReqId.split('.') as [string, string, string]
    const forged = `${id}.${secret.slice(0, -2)}AA.${exp}`
    t.equal((await poll(h, forged)).json?.error, 'invalid_grant', 'the approval id alone (the page URL) redeems nothing')
    t.equal((await poll(h, 'not-one-of-ours')).json?.error, 'invalid_grant')
    const ok = await poll(h, authReqId)
    t.equal(ok.status, 200, 'the owner still gets its tokens at the first poll')
  })

  t.test('two racing polls of an approved request: tokens exactly once', async (t) => {
    const started = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice' })
    const authReqId = String(started.json?.auth_req_id)
    await decide(h, authReqId, 'approved')
    const answers = await Promise.all([poll(h, authReqId), poll(h, authReqId), poll(h, authReqId)])
    t.equal(answers.filter((a) => a.status === 200).length, 1, 'one poll gets the tokens')
    wait(5)
    t.equal((await poll(h, authReqId)).json?.error, 'invalid_grant', 'and no later one')
  })

  t.test('a request approved before the person withdrew the client: invalid_grant, no grant', async (t) => {
    const started = await bcAuthorize(h, { scope: 'openid', login_hint: 'bob' })
    const authReqId = String(started.json?.auth_req_id)
    await decide(h, authReqId, 'approved', 'user-0002')
    wait(1)
    await h.store.allowances.withdraw('user-0002', 'agent', 600) // what the account page's withdrawal does
    const r = await poll(h, authReqId)
    t.equal(r.status, 400)
    t.equal(r.json?.error, 'invalid_grant')
    t.notOk(
      (await h.store.allowances.list('user-0002')).some((a) => a.clientId === 'agent' && a.grantIds.length > 0),
      'no grant was made',
    )
  })

  t.test('login_hint by email (any case) and id_token_hint of this client', async (t) => {
    const byEmail = await bcAuthorize(h, { scope: 'openid', login_hint: 'Bob@Example.com' })
    t.equal(byEmail.status, 200, byEmail.text)
    t.equal((await h.as.approvals.get(approvalIdOf(String(byEmail.json?.auth_req_id))))?.sub, 'user-0002')
    const byIdToken = await bcAuthorize(h, { scope: 'openid', id_token_hint: agentIdToken })
    t.equal(byIdToken.status, 200, 'an id_token bearward issued to this client names its person')
    t.equal((await h.as.approvals.get(approvalIdOf(String(byIdToken.json?.auth_req_id))))?.sub, 'alice')
    const web = await tokensFor(h, { clientId: 'web' })
    t.equal((await bcAuthorize(h, { scope: 'openid', id_token_hint: String(web.id_token) })).json?.error, 'unknown_user_id', "another client's id_token")
  })

  t.test('refusals: each answered as CIBA 13 says, and nothing is stored', async (t) => {
    const before = await pendingOf()
    const cases: Array<[string, Record<string, string>, string, number, string?]> = [
      ['no scope', { login_hint: 'alice' }, 'invalid_request', 400],
      ['no openid', { scope: 'orders:read', login_hint: 'alice' }, 'invalid_scope', 400],
      ['a scope the client may not ask for', { scope: 'openid orders:write', login_hint: 'alice' }, 'invalid_scope', 400],
      ['an unknown scope', { scope: 'openid nope', login_hint: 'alice' }, 'invalid_scope', 400],
      ['no hint', { scope: 'openid' }, 'invalid_request', 400],
      ['two hints', { scope: 'openid', login_hint: 'alice', id_token_hint: 'x.y.z' }, 'invalid_request', 400],
      ['login_hint_token', { scope: 'openid', login_hint_token: 'eyJ.x.y' }, 'invalid_request', 400],
      ['an unknown person', { scope: 'openid', login_hint: 'mallory' }, 'unknown_user_id', 400],
      ['an email nobody has', { scope: 'openid', login_hint: 'alice@example.org' }, 'unknown_user_id', 400],
      ['an id_token_hint that is not ours', { scope: 'openid', id_token_hint: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln' }, 'unknown_user_id', 400],
      ['a binding_message of 65 characters', { scope: 'openid', login_hint: 'alice', binding_message: 'x'.repeat(65) }, 'invalid_binding_message', 400],
      [
        'a binding_message with a bidi override',
        { scope: 'openid', login_hint: 'alice', binding_message: 'pay 5\u202E00 EUR' },
        'invalid_binding_message',
        400,
      ],
      ['a binding_message with a line break', { scope: 'openid', login_hint: 'alice', binding_message: 'ok\nApprove' }, 'invalid_binding_message', 400],
      ['a binding_message with a zero-width space', { scope: 'openid', login_hint: 'alice', binding_message: 'pa\u200By' }, 'invalid_binding_message', 400],
      ['an empty binding_message', { scope: 'openid', login_hint: 'alice', binding_message: ' ' }, 'invalid_binding_message', 400],
      ['user_code', { scope: 'openid', login_hint: 'alice', user_code: '1234' }, 'invalid_request', 400],
      ['requested_expiry 0', { scope: 'openid', login_hint: 'alice', requested_expiry: '0' }, 'invalid_request', 400],
      ['requested_expiry not a number', { scope: 'openid', login_hint: 'alice', requested_expiry: '1e3' }, 'invalid_request', 400],
      [
        'authorization_details the client may not use',
        { scope: 'openid', login_hint: 'alice', authorization_details: '[]' },
        'invalid_authorization_details',
        400,
      ],
      ['acr_values bearward does not know', { scope: 'openid', login_hint: 'alice', acr_values: 'urn:x:loa:4' }, 'invalid_request', 400],
      ['a signed request', { scope: 'openid', login_hint: 'alice', request: 'eyJ.x.y' }, 'invalid_request', 400],
    ]
    for (const [name, params, error, status] of cases) {
      const r = await bcAuthorize(h, params)
      t.equal(r.status, status, `${name}: ${status}`)
      t.equal(r.json?.error, error, `${name}: ${error}`)
    }
    const pingNoToken = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice' }, 'pinger')
    t.equal(pingNoToken.json?.error, 'invalid_request', 'a ping client without client_notification_token')
    const pingBadToken = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', client_notification_token: 'a b' }, 'pinger')
    t.equal(pingBadToken.json?.error, 'invalid_request', 'a client_notification_token that is not a bearer token')
    const web = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice' }, 'web')
    t.equal(web.json?.error, 'unauthorized_client', 'a client without the grant')
    const wrongSecret = await reply(postForm(`${h.url}/bc-authorize`, { scope: 'openid', login_hint: 'alice' }, { authorization: basicAuth('agent', 'wrong') }))
    t.equal(wrongSecret.status, 401)
    t.equal(wrongSecret.json?.error, 'invalid_client')
    const repeated = await reply(
      fetch(`${h.url}/bc-authorize`, {
        method: 'POST',
        headers: { authorization: auth('agent'), 'content-type': 'application/x-www-form-urlencoded' },
        body: 'scope=openid&login_hint=alice&login_hint=bob',
      }),
    )
    t.equal(repeated.json?.error, 'invalid_request', 'a repeated parameter')
    const get = await reply(fetch(`${h.url}/bc-authorize`))
    t.equal(get.status, 405)
    const ciba = await reply(postForm(`${h.url}/token`, { grant_type: CIBA, auth_req_id: 'x' }, { authorization: basic('web') }))
    t.equal(ciba.json?.error, 'unauthorized_client', 'the grant at /token needs it registered too')
    t.equal(await pendingOf(), before, 'no refused request left an approval')
  })

  t.test('a flood of requests for one person is bounded: access_denied (403)', async (t) => {
    let refused: Reply | null = null
    for (let i = 0; i < 40 && refused === null; i++) {
      const r = await bcAuthorize(h, { scope: 'openid', login_hint: 'bob' })
      if (r.status !== 200) refused = r
    }
    t.equal(refused?.status, 403)
    t.equal(refused?.json?.error, 'access_denied')
    t.ok((await pendingOf('user-0002')) <= 20, 'at most the per-person bound waits')
  })

  t.test('ping mode: approve and deny each POST the auth_req_id with the Bearer token, once', async (t) => {
    const approved = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', client_notification_token: 'tok-approve.123' }, 'pinger')
    t.equal(approved.status, 200, approved.text)
    const id = String(approved.json?.auth_req_id)
    const stored = JSON.stringify(await h.store.deliveries.claim('ciba', 1, 100))
    t.notOk(stored.includes(id) || stored.includes('tok-approve.123'), 'the queue holds neither secret in the clear')
    const arriving = receiver.next()
    await decide(h, id, 'approved')
    const ping = await arriving
    t.equal(ping.authorization, 'Bearer tok-approve.123')
    t.match(ping.contentType, /^application\/json/)
    t.same(ping.body, { auth_req_id: id })
    const tokens = await poll(h, id, 'pinger')
    t.equal(tokens.status, 200)
    t.equal(h.metrics.cibaPings.get({ outcome: 'delivered' }), 1)

    const denied = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', client_notification_token: 'tok-deny' }, 'pinger')
    const deniedId = String(denied.json?.auth_req_id)
    const next = receiver.next()
    await decide(h, deniedId, 'denied')
    t.same((await next).body, { auth_req_id: deniedId })
    t.equal((await poll(h, deniedId, 'pinger')).json?.error, 'access_denied')
    await h.as.ciba.pings.runOnce()
    t.equal(receiver.pings.length, 2, 'one ping per decision')
  })

  t.test('ping mode: a failing endpoint is retried with backoff', async (t) => {
    receiver.status = 500
    const r = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', client_notification_token: 'tok-retry' }, 'pinger')
    const id = String(r.json?.auth_req_id)
    await decide(h, id, 'approved')
    await h.as.ciba.pings.runOnce()
    t.ok(h.metrics.cibaPings.get({ outcome: 'failed' }) >= 1, 'the failure is counted')
    receiver.status = 204
    const arriving = receiver.next()
    wait(2)
    await h.as.ciba.pings.runOnce()
    t.same((await arriving).body, { auth_req_id: id })
  })
})
