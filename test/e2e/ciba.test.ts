import t from 'tap'
import * as client from 'openid-client'
import { startBin, tempConfig } from '../helpers/bin.js'
import { startUpstream } from '../helpers/upstream.js'
import { Browser, parseForms } from '../helpers/browser.js'
import { asConfig, demoHashes, DEMO_PASSWORD, DEMO_SECRET } from '../helpers/as-config.js'
import { freePort } from '../helpers/http.js'
import { launchChromium, newContext } from '../helpers/chromium.js'
import { signIn, submitAndWait } from '../helpers/browser-as.js'

/**
 * OpenID CIBA Core 1.0 end to end: openid-client v6's own CIBA functions
 * (`initiateBackchannelAuthentication`, `pollBackchannelAuthenticationGrant`), unmodified, against
 * `bin/bearward`, in poll and ping mode, approved and denied, expired, and polled too fast. The
 * person decides on the approval page: once in Chromium, elsewhere through the page's form as a
 * signed-in browser sends it.
 */

const CIBA = 'urn:openid:params:grant-type:ciba'

/** The OAuth `error` a rejected grant ended with (openid-client's ResponseBodyError). */
async function errorOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p
    return undefined
  } catch (err) {
    return err instanceof client.ResponseBodyError ? err.error : String(err)
  }
}

/** A signed-in browser decides the approval the auth_req_id names, through GET and POST /approve. */
async function personDecides(issuer: string, authReqId: string, decision: 'approve' | 'deny'): Promise<string> {
  const browser = new Browser()
  const origin = new URL(issuer).origin
  let url = `${issuer}/approve?id=${authReqId.split('.')[0]}`
  let { res, url: at } = await browser.follow(await browser.get(url), url, origin)
  for (let step = 0; step < 4; step++) {
    const html = await res.text()
    const forms = parseForms(html, at).filter((f) => f.method === 'POST')
    const login = forms.find((f) => 'password' in f.fields)
    const approval = forms.find((f) => f.buttons.some((b) => b.name === 'decision'))
    let sent: Response
    if (login) sent = await browser.submit(login, { username: 'alice', password: DEMO_PASSWORD })
    else if (approval) sent = await browser.submit(approval, { decision })
    else return html
    ;({ res, url: at } = await browser.follow(sent, at, origin))
    url = at
  }
  throw new Error('the approval page flow did not finish')
}

t.test('CIBA with openid-client against bin/bearward', async (t) => {
  const up = await startUpstream('orders')
  /** Resolved by the next ping the client's endpoint receives. */
  const pingWaiters: Array<() => void> = []
  const nextPing = (): Promise<void> => new Promise((resolve) => pingWaiters.push(resolve))
  const pings = await startUpstream('agent-callback', (_req, res) => {
    res.statusCode = 204
    res.end()
    pingWaiters.shift()?.()
  })
  const port = await freePort()
  const { secretHash } = await demoHashes()
  const config = await asConfig({ port, upstream: up.url, override: { authorization_server: { ciba: { ttl: '2m', interval: '1s' } } } })
  config.authorization_server.clients.push(
    {
      client_id: 'agent',
      name: 'Order agent',
      type: 'confidential',
      secret_hash: secretHash,
      grant_types: ['ciba'],
      scopes: ['openid', 'email', 'orders:read'],
    },
    {
      client_id: 'pinger',
      name: 'Ping agent',
      type: 'confidential',
      secret_hash: secretHash,
      grant_types: [CIBA],
      scopes: ['openid', 'orders:read'],
      backchannel_token_delivery_mode: 'ping',
      backchannel_client_notification_endpoint: `${pings.url}/ciba`,
    },
  )
  const cfg = await tempConfig(config)
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await Promise.all([up.close(), pings.close(), cfg.cleanup()])
  })
  const issuer = bin.url.replace(/\/$/, '')
  const insecure: client.DiscoveryRequestOptions = { execute: [client.allowInsecureRequests] }
  const agent = await client.discovery(new URL(issuer), 'agent', DEMO_SECRET, client.ClientSecretBasic(DEMO_SECRET), insecure)
  const pinger = await client.discovery(new URL(issuer), 'pinger', DEMO_SECRET, client.ClientSecretBasic(DEMO_SECRET), insecure)
  /** What /token answered, in order (the library hides the polls it retries). */
  const answers: string[] = []
  /** Resolved when /token answers `error` (checked at each answer). */
  let answered: { error: string; resolve: () => void } | null = null
  agent[client.customFetch] = async (url, options) => {
    const res = await fetch(url, options as RequestInit)
    if (url.endsWith('/token')) {
      answers.push(res.ok ? 'tokens' : String(((await res.clone().json()) as { error?: string }).error))
      if (answered !== null && answers.includes(answered.error)) answered.resolve()
    }
    return res
  }

  await t.test('discovery advertises CIBA', async (t) => {
    const m = agent.serverMetadata()
    t.equal(m.backchannel_authentication_endpoint, `${issuer}/bc-authorize`)
    t.same(m.backchannel_token_delivery_modes_supported, ['poll', 'ping'])
    t.equal(m.backchannel_user_code_parameter_supported, false)
    t.ok(m.grant_types_supported?.includes(CIBA))
  })

  await t.test('poll mode, approved in Chromium: tokens for alice, the route opens', async (t) => {
    const started = await client.initiateBackchannelAuthentication(agent, {
      scope: 'openid email orders:read',
      login_hint: 'alice',
      binding_message: 'Order 42 <b>now</b>',
    })
    t.equal(started.interval, 1)
    const polling = client.pollBackchannelAuthenticationGrant(agent, started)
    const browser = await launchChromium()
    t.teardown(() => browser.close())
    const context = await newContext(browser, 'desktop')
    const page = await context.newPage()
    await page.goto(`${issuer}/approve?id=${started.auth_req_id.split('.')[0]}`)
    await signIn(page)
    t.equal(await page.getByRole('heading', { level: 1 }).textContent(), 'Approve this request?')
    const text = (await page.textContent('body')) ?? ''
    t.match(text, 'Order agent', 'who asks')
    t.match(text, 'Order 42 <b>now</b>', 'the binding message, as text: its markup is not markup')
    t.equal(await page.locator('main b, body b').count(), 0, 'no element came from the binding message')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Approve' }).click())
    t.match((await page.textContent('body')) ?? '', /You approved the request/)
    const tokens = await polling
    t.equal(tokens.claims()?.sub, 'alice')
    t.equal(tokens.claims()?.aud, 'agent')
    t.equal(tokens.scope, 'openid email orders:read')
    const route = await fetch(`${issuer}/orders/7`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
    t.equal(route.status, 200, "the person's token opens the protected route")
    t.ok(answers.includes('authorization_pending'), 'the library polled while the person decided')
  })

  await t.test('poll mode, denied: access_denied', async (t) => {
    const started = await client.initiateBackchannelAuthentication(agent, { scope: 'openid', login_hint: 'alice@example.com' })
    const polling = client.pollBackchannelAuthenticationGrant(agent, started)
    const page = await personDecides(issuer, started.auth_req_id, 'deny')
    t.match(page, /You denied the request/)
    t.equal(await errorOf(polling), 'access_denied')
  })

  await t.test('expiry: expired_token once requested_expiry has passed', async (t) => {
    const started = await client.initiateBackchannelAuthentication(agent, { scope: 'openid', login_hint: 'alice', requested_expiry: '2' })
    t.equal(started.expires_in, 2)
    // The library gives up at expires_in by itself; a longer signal lets the server say it.
    t.equal(await errorOf(client.pollBackchannelAuthenticationGrant(agent, started, undefined, { signal: AbortSignal.timeout(20_000) })), 'expired_token')
  })

  await t.test('a client polling faster than the interval gets slow_down, backs off by 5 s, then its tokens', async (t) => {
    const started = await client.initiateBackchannelAuthentication(agent, { scope: 'openid', login_hint: 'alice' })
    answers.length = 0
    // A client that ignores the interval it was given: the library then polls at once.
    const begun = Date.now()
    const slowedDown = new Promise<void>((resolve) => {
      answered = { error: 'slow_down', resolve }
    })
    const polling = client.pollBackchannelAuthenticationGrant(agent, { ...started, interval: 0 })
    await slowedDown
    await personDecides(issuer, started.auth_req_id, 'approve')
    const tokens = await polling
    t.equal(tokens.claims()?.sub, 'alice')
    t.same(answers.slice(0, 2), ['authorization_pending', 'slow_down'], 'answered, then too fast')
    t.equal(answers.at(-1), 'tokens')
    t.ok(Date.now() - begun >= 5000, 'the library waited the 5 s slow_down adds')
  })

  await t.test('ping mode: approve and deny each ping the client, which then fetches the answer', async (t) => {
    const started = await client.initiateBackchannelAuthentication(pinger, {
      scope: 'openid orders:read',
      login_hint: 'alice',
      client_notification_token: 'ping-token-1',
    })
    const pinged = nextPing()
    await personDecides(issuer, started.auth_req_id, 'approve')
    await pinged
    const ping = pings.seen[0]
    t.equal(ping?.method, 'POST')
    t.equal(ping?.url, '/ciba')
    t.equal(ping?.headers.authorization, 'Bearer ping-token-1')
    t.same(JSON.parse(ping?.body ?? '{}'), { auth_req_id: started.auth_req_id })
    const tokens = await client.pollBackchannelAuthenticationGrant(pinger, started)
    t.equal(tokens.claims()?.sub, 'alice')

    const denied = await client.initiateBackchannelAuthentication(pinger, { scope: 'openid', login_hint: 'alice', client_notification_token: 'ping-token-2' })
    const pingedAgain = nextPing()
    await personDecides(issuer, denied.auth_req_id, 'deny')
    await pingedAgain
    t.equal(pings.seen[1]?.headers.authorization, 'Bearer ping-token-2')
    t.same(JSON.parse(pings.seen[1]?.body ?? '{}'), { auth_req_id: denied.auth_req_id })
    t.equal(await errorOf(client.pollBackchannelAuthenticationGrant(pinger, denied)), 'access_denied')
  })
})
