/**
 * Signing in with an upstream OpenID Connect provider (identity_providers),
 * through the whole authorization server on a real HTTP server: a real
 * provider (node-oidc-provider with its dev login) for the happy paths and
 * `allowed`, a rogue one (jose) for a wrong nonce, iss or aud, and one that
 * is down. Each refusal ends on a page and leaves no code, session or person
 * behind.
 */
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { MemoryStore } from '../../src/store/memory.js'
import { randomToken } from '../../src/crypto/random.js'
import { decodeJwt } from 'jose'
import { Browser, parseForms } from '../helpers/browser.js'
import { CLIENT_SECRET, WEB_CALLBACK, authParams, countCodes, frontYaml, pkce } from '../helpers/as-front.js'
import { freePort } from '../helpers/http.js'
import { serveRuntime } from '../helpers/serve-runtime.js'
import { type SignInEnding, type SignInOptions, upstreamSignIn } from '../helpers/upstream-sign-in.js'
import { OP_CLIENT_SECRET, startRogueOp, startTestOp, type TestOp } from '../helpers/upstream-op.js'

const CLIENT_ORIGIN = new URL(WEB_CALLBACK).origin

/** The identity providers under test: a real one twice (with `allowed` by domain, by group), a rogue one, one that is down. */
const PROVIDERS = `  access_token: { claims: [email] }
  identity_providers:
    - id: corp
      name: Corp SSO
      issuer: \${OP_ISSUER}
      client_id: bearward
      client_secret: "\${OP_SECRET}"
      allowed: { email_domains: [example.com] }
      claims: { name: name, email: email }
    - id: groups
      name: Admins SSO
      issuer: \${OP_ISSUER}
      client_id: bearward
      client_secret: "\${OP_SECRET}"
      scopes: [openid, email, groups]
      allowed: { claim: groups, values: [admins] }
    - id: rogue
      name: Rogue SSO
      issuer: \${ROGUE_ISSUER}
      client_id: bearward
      client_secret: rogue-secret
    - id: down
      name: Down SSO
      issuer: \${DOWN_ISSUER}
      client_id: bearward
`

t.test('identity providers: sign in upstream, come back, consent, tokens', async (t) => {
  const rogue = await startRogueOp()
  t.teardown(rogue.stop)
  const downIssuer = `http://127.0.0.1:${await freePort()}`
  // The provider registers our callback URL before our config can name it: the config is read once the address is known.
  const env: Record<string, string> = { OP_SECRET: OP_CLIENT_SECRET, ROGUE_ISSUER: rogue.issuer, DOWN_ISSUER: downIssuer }
  const made: { op?: TestOp; store?: MemoryStore } = {}
  const served = await serveRuntime(
    async (url) => {
      made.op = await startTestOp([`${url}/login/upstream/corp/callback`, `${url}/login/upstream/groups/callback`])
      env.OP_ISSUER = made.op.issuer
      return frontYaml({ asExtra: PROVIDERS })
    },
    {
      clock: new ManualClock(Date.now()),
      env,
      store: (clock) => {
        made.store = new MemoryStore(clock, { sweepIntervalMs: 0 })
        return made.store
      },
    },
  )
  const { op, store } = made
  if (op === undefined || store === undefined) throw new Error('the provider or the store was not made')
  t.teardown(op.stop)
  t.teardown(served.close)
  const logLines = (): string[] => served.logs.map((l) => JSON.stringify(l))
  const codes = countCodes(store)

  type Ending = SignInEnding

  /**
   * A person at /authorize: press "Continue with <provider>", sign in at the
   * provider as `login` (its dev pages), allow there, allow at bearward.
   * Ends at the client's redirect URI or on the first page it cannot act on.
   */
  async function signIn(browser: Browser, provider: string, login: string, o: SignInOptions & { scope?: string } = {}): Promise<Ending> {
    const { challenge, verifier } = pkce()
    const start = `${served.url}/authorize?${new URLSearchParams(authParams({ scope: o.scope ?? 'openid profile email orders:read', code_challenge: challenge })).toString()}`
    lastVerifier = verifier
    return await upstreamSignIn(browser, start, CLIENT_ORIGIN, provider, login, o)
  }
  let lastVerifier = ''

  async function exchange(code: string): Promise<Record<string, unknown>> {
    const res = await fetch(`${served.url}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`web:${CLIENT_SECRET}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: WEB_CALLBACK, code_verifier: lastVerifier }),
    })
    t.equal(res.status, 200, 'the client gets tokens')
    return (await res.json()) as Record<string, unknown>
  }

  const sessionCookieOf = (b: Browser): string | undefined => b.cookies.get('bw_session')

  await t.test('the login page offers a button per provider beside the local form', async (t) => {
    const res = await fetch(`${served.url}/authorize?${new URLSearchParams(authParams()).toString()}`)
    const html = await res.text()
    t.equal(res.status, 200)
    for (const name of ['Corp SSO', 'Admins SSO', 'Rogue SSO', 'Down SSO']) t.match(html, `Continue with ${name}`)
    t.match(html, 'name="password"', 'the local form is there too (local_login defaults to true)')
  })

  let firstSub = ''
  await t.test('choose the provider, sign in there, come back, consent: the client gets tokens for corp:<sub>', async (t) => {
    const browser = new Browser()
    const end = await signIn(browser, 'corp', 'ann')
    if (end.kind !== 'client') throw new Error(`ended on a ${end.status} page: ${end.html.slice(0, 400)}`)
    const code = end.url.searchParams.get('code')
    t.type(code, 'string', 'a code came back to the client')
    t.equal(end.url.searchParams.get('state'), authParams().state)
    const tokens = await exchange(code ?? '')
    const id = decodeJwt(String(tokens.id_token))
    t.equal(id.sub, 'corp:ann', 'sub is <provider id>:<upstream sub>')
    t.equal(id.name, 'Person ann', 'mapped claim name (from the provider UserInfo, which oidc-provider keeps out of the id_token)')
    t.equal(id.email, 'ann@example.com', 'mapped claim email')
    const access = decodeJwt(String(tokens.access_token))
    t.equal(access.sub, 'corp:ann', 'the access token names the same person')
    t.equal(access.email, 'ann@example.com', 'and carries the mapped email (access_token.claims: [email], email scope granted)')
    t.notOk('name' in access, 'a claim access_token.claims does not name stays out of the access token')
    const info = await fetch(`${served.url}/userinfo`, { headers: { authorization: `Bearer ${String(tokens.access_token)}` } })
    t.equal(info.status, 200)
    t.same(await info.json(), { name: 'Person ann', email: 'ann@example.com', sub: 'corp:ann' }, 'UserInfo releases the mapped claims')
    t.notOk(browser.cookies.has('bw_upstream'), 'the state cookie is gone')
    firstSub = String(id.sub)
  })

  await t.test('the same person again, in another browser, gets the same sub', async (t) => {
    const end = await signIn(new Browser(), 'corp', 'ann')
    if (end.kind !== 'client') throw new Error(`ended on a ${end.status} page`)
    const tokens = await exchange(end.url.searchParams.get('code') ?? '')
    t.equal(decodeJwt(String(tokens.id_token)).sub, firstSub)
  })

  await t.test('the device page and the account page sign in the same way', async (t) => {
    const browser = new Browser()
    const page = await browser.get(`${served.url}/account`)
    const html = await page.text()
    const button = parseForms(html, `${served.url}/account`).find((f) => f.fields.provider === 'corp')
    if (!button) throw new Error('no provider button on the account page')
    browser.origin = served.url
    let res = await browser.submit(button)
    let at = button.action
    for (let i = 0; i < 15 && res.status !== 200; i++) {
      at = new URL(res.headers.get('location') ?? '', at).toString()
      res = await browser.get(at)
    }
    let body = await res.text()
    for (let i = 0; i < 4 && !body.includes('applications you allowed') && !body.includes('Applications'); i++) {
      const forms = parseForms(body, at)
      const f = forms.find((x) => 'login' in x.fields) ?? forms.find((x) => x.fields.prompt === 'consent')
      if (!f) break
      res = await browser.submit(f, 'login' in f.fields ? { login: 'ann', password: 'x' } : {})
      at = f.action
      for (let j = 0; j < 15 && res.status >= 300 && res.status < 400; j++) {
        at = new URL(res.headers.get('location') ?? '', at).toString()
        res = await browser.get(at)
      }
      body = await res.text()
    }
    t.equal(new URL(at).pathname, '/account', 'back on the account page')
    t.equal(res.status, 200)
    t.match(body, 'Person ann', 'signed in as the upstream person')
  })

  await t.test('a person outside `allowed` is refused: a clear page, access_denied for the client, nothing issued', async (t) => {
    const before = codes.count
    const browser = new Browser()
    const end = await signIn(browser, 'corp', 'out@other.org')
    if (end.kind !== 'page') throw new Error('the outsider was let through')
    t.equal(end.status, 403)
    t.match(end.html, 'You cannot sign in here')
    t.match(end.html, 'out@other.org')
    const back = /<a href="([^"]+)"[^>]*>Return to Example Web App<\/a>/.exec(end.html)?.[1]?.replace(/&amp;/g, '&')
    if (back === undefined) throw new Error('no way back to the client')
    const u = new URL(back)
    t.equal(u.origin + u.pathname, WEB_CALLBACK)
    t.equal(u.searchParams.get('error'), 'access_denied')
    t.equal(u.searchParams.get('state'), authParams().state)
    t.equal(codes.count, before, 'no code')
    t.notOk(sessionCookieOf(browser), 'no session')
    t.equal(await store.upstream.getPerson('corp:out@other.org'), null, 'nobody remembered')

    const groups = await signIn(new Browser(), 'groups', 'ann')
    t.equal(groups.kind === 'page' && groups.status, 403, 'a claim rule (groups: admins) refuses a staff member')
    const admin = await signIn(new Browser(), 'groups', 'admin-zoe')
    t.equal(admin.kind, 'client', 'and lets an admin in')
  })

  await t.test('the person cancels at the provider (it says access_denied): a page that says so, nothing issued', async (t) => {
    const before = codes.count
    const browser = new Browser()
    const end = await signIn(browser, 'corp', 'ann', { cancelAtProvider: true })
    if (end.kind !== 'page') throw new Error('a cancelled sign-in went through')
    t.match(end.url, '/login/upstream/corp/callback?error=access_denied', 'the provider sent the person back with its error')
    t.equal(end.status, 400)
    t.match(end.html, 'Corp SSO did not sign you in: the sign-in was cancelled or refused there.')
    t.match(end.html, 'access_denied', 'the error code is shown')
    t.match(end.html, /<a [^>]*href="[^"]*authorize\?[^"]*"/, 'with a link to try again')
    t.equal(codes.count, before, 'no code')
    t.notOk(sessionCookieOf(browser), 'no session')
    t.notOk(browser.cookies.has('bw_upstream'), 'the state cookie is cleared')
    t.ok(
      logLines().some((l) => l.includes('"upstream_login_failed"') && l.includes('authorization response error access_denied')),
      'logged as the provider refusing',
    )
  })

  await t.test('a tampered state ends on a page; nothing issued', async (t) => {
    const before = codes.count
    const browser = new Browser()
    const end = await signIn(browser, 'corp', 'ann', { tamper: (u) => u.searchParams.set('state', 'A'.repeat(43)) })
    if (end.kind !== 'page') throw new Error('tampered state went through')
    t.equal(end.status, 400)
    t.match(end.html, 'This sign-in cannot be completed')
    t.equal(codes.count, before)
    t.notOk(sessionCookieOf(browser))
  })

  const judged: Record<string, string> = {
    'wrong-nonce': 'the wrong nonce',
    'wrong-iss': 'the wrong iss',
    'wrong-aud': 'the wrong aud',
    'foreign-key': "a signature by a key outside the provider's JWKS (same kid)",
    'unknown-kid': "a signature by a key whose kid the provider's JWKS lacks",
    unsigned: 'alg none (no signature)',
  }
  for (const mode of ['wrong-nonce', 'wrong-iss', 'wrong-aud', 'foreign-key', 'unknown-kid', 'unsigned'] as const) {
    await t.test(`an id_token with ${judged[mode]} is refused: a page, nothing issued`, async (t) => {
      rogue.mode = mode
      const before = codes.count
      const asked = rogue.tokenRequests
      const browser = new Browser()
      const end = await signIn(browser, 'rogue', 'x')
      if (end.kind !== 'page') throw new Error(`${mode} went through`)
      t.equal(rogue.tokenRequests, asked + 1, 'the code was exchanged and its id_token judged')
      t.equal(end.status, 502)
      t.match(end.html, 'This sign-in could not be verified')
      t.equal(codes.count, before, 'no code')
      t.notOk(sessionCookieOf(browser), 'no session')
      t.equal(await store.upstream.getPerson('rogue:rogue-1'), null, 'nobody remembered')
    })
  }

  await t.test('the rogue provider answering correctly does sign in (the refusals above are about the claims)', async (t) => {
    rogue.mode = 'good'
    const end = await signIn(new Browser(), 'rogue', 'x')
    t.equal(end.kind, 'client')
  })

  await t.test('a provider that is down: a page, nothing issued, and it was reported with its position', async (t) => {
    const before = codes.count
    const browser = new Browser()
    const end = await signIn(browser, 'down', 'x')
    if (end.kind !== 'page') throw new Error('down provider went through')
    t.equal(end.status, 503)
    t.match(end.html, 'Down SSO is not available')
    t.equal(codes.count, before)
    t.notOk(sessionCookieOf(browser))
    const report = served.logs.find((l) => l.event === 'identity_provider_discovery_failed' && l.provider === 'down')
    t.equal(report?.position, 'authorization_server.identity_providers[3]')
    t.notOk(
      logLines().some((l) => l.includes(OP_CLIENT_SECRET)),
      'no client secret in the log',
    )
  })

  await t.test('a provider that goes down between sign-in and callback: a page, nothing issued', async (t) => {
    const before = codes.count
    const browser = new Browser()
    const end = await signIn(browser, 'corp', 'ann', {
      tamper: () => {
        // The person is on the way back with a code; the provider stops answering before bearward exchanges it.
        void op.stop()
      },
    })
    if (end.kind !== 'page') throw new Error('went through without the provider')
    t.equal(end.status, 503)
    t.match(end.html, 'Corp SSO is not available')
    t.equal(codes.count, before)
    t.notOk(sessionCookieOf(browser))
  })
  /** The stylesheet a page links to, fetched the way a browser resolves it against the page's URL. */
  const stylesheetOf = async (pageUrl: string, html: string): Promise<{ href: string; url: string; status: number; type: string | null }> => {
    const href = /<link rel="stylesheet" href="([^"]+)">/.exec(html)?.[1] ?? ''
    const url = new URL(href, pageUrl).href
    const res = await fetch(url)
    await res.arrayBuffer()
    return { href, url, status: res.status, type: res.headers.get('content-type') }
  }

  await t.test('pages at the callback path find the stylesheet: 405 for a POST', async (t) => {
    const callback = `${served.url}/login/upstream/corp/callback`
    const res = await fetch(callback, { method: 'POST', body: '' })
    const html = await res.text()
    t.equal(res.status, 405)
    t.equal(res.headers.get('allow'), 'GET')
    t.match(html, 'Method not allowed')
    const css = await stylesheetOf(callback, html)
    t.equal(css.url, `${served.url}/assets/bearward.css`, `the link (${css.href}) resolves to the pages' stylesheet`)
    t.equal(css.status, 200)
    t.match(css.type, /^text\/css/)
  })

  // Last: it closes the store.
  await t.test('pages at the callback path find the stylesheet: 503 when the store is down', async (t) => {
    const state = randomToken()
    const callback = `${served.url}/login/upstream/corp/callback?code=x&state=${state}`
    await store.close()
    const res = await fetch(callback, { headers: { cookie: `bw_upstream=${state}` } })
    const html = await res.text()
    t.equal(res.status, 503, 'the state is bound to this browser, so the store is asked, and it is down')
    t.match(html, 'Temporarily unavailable')
    const css = await stylesheetOf(callback, html)
    t.equal(css.url, `${served.url}/assets/bearward.css`, `the link (${css.href}) resolves to the pages' stylesheet`)
    t.equal(css.status, 200)
  })
})
