/**
 * The step-up walk (RFC 9470) through both faces of one process, with the
 * injected clock: alice signs in, her token passes a route that demands a
 * sign-in no older than 5 minutes; time passes and the same token gets 401
 * insufficient_user_authentication with max_age; re-authorizing without
 * max_age reuses the old session (and its old auth_time: still refused);
 * re-authorizing with the challenge's max_age makes her sign in again, and
 * the new token is accepted. Nothing refused reaches the upstream.
 */
import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { ManualClock } from '../../src/clock.js'
import { Browser, authorizeAsPerson, parseForms } from '../helpers/browser.js'
import { DEMO_PASSWORD, DEMO_SECRET, demoHashes } from '../helpers/as-config.js'
import { basic, form } from '../helpers/store-pair.js'
import { serveRuntime } from '../helpers/serve-runtime.js'
import { startUpstream } from '../helpers/upstream.js'

const CALLBACK = 'http://127.0.0.1:5555/callback'

t.test('a route demanding max_age: refused, re-authorized with max_age, signed in again, accepted', async (t) => {
  const up = await startUpstream('pay')
  t.teardown(() => up.close())
  const { secretHash, passwordHash } = await demoHashes()
  const clock = new ManualClock(Date.UTC(2026, 0, 1, 9))
  const served = await serveRuntime(
    async (url) => `
listen: 127.0.0.1:0
public_url: ${url}
authorization_server:
  access_token: { format: jwt, ttl: 1h }
  scopes: { pay: Pay }
  clients:
    - client_id: web
      type: confidential
      secret_hash: "${secretHash}"
      redirect_uris: [${CALLBACK}]
      grant_types: [authorization_code]
      scopes: [openid, pay]
      skip_consent: true
  users:
    - username: alice
      password_hash: "${passwordHash}"
routes:
  - name: pay
    match: { path: /pay }
    upstream: ${up.url}
    scopes: { "*": [pay] }
    authentication: { max_age: 5m }
`,
    { clock },
  )
  t.teardown(() => served.close())
  const browser = new Browser()

  /** The authorization URL of the web client, with extra parameters (max_age); and how to redeem its code. */
  function authorization(extra: Record<string, string> = {}): { url: string; redeem(cb: URL): Promise<string> } {
    const verifier = randomBytes(32).toString('base64url')
    const params = new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: CALLBACK,
      scope: 'openid pay',
      state: 's',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
      ...extra,
    })
    return {
      url: `${served.url}/authorize?${params}`,
      async redeem(cb: URL): Promise<string> {
        const res = await form(
          `${served.url}/token`,
          { grant_type: 'authorization_code', code: cb.searchParams.get('code') ?? '', redirect_uri: CALLBACK, code_verifier: verifier },
          basic('web', DEMO_SECRET),
        )
        t.equal(res.status, 200, 'the code is redeemed')
        return ((await res.json()) as { access_token: string }).access_token
      },
    }
  }
  const authTime = (jwt: string): unknown => (JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>).auth_time
  const pay = async (token: string): Promise<Response> => {
    const res = await fetch(`${served.url}/pay/1`, { headers: { authorization: `Bearer ${token}` } })
    await res.arrayBuffer()
    return res
  }
  /** True when /authorize answers with the sign-in form (not a redirect to the client). */
  async function asksToSignIn(url: string): Promise<boolean> {
    const origin = new URL(url).origin
    const { res, url: at } = await browser.follow(await browser.get(url), url, origin)
    if (res.status !== 200) return false
    return parseForms(await res.text(), at).some((f) => 'password' in f.fields)
  }

  const first = authorization()
  const token1 = await first.redeem(await authorizeAsPerson(browser, first.url, { username: 'alice', password: DEMO_PASSWORD }))
  const signedInAt = Math.floor(clock.now() / 1000)
  t.equal(authTime(token1), signedInAt)
  t.equal((await pay(token1)).status, 200, 'a fresh sign-in passes')

  clock.advance(10 * 60_000)
  const stale = await pay(token1)
  t.equal(stale.status, 401, 'ten minutes later the same token is refused')
  const challenge = stale.headers.get('www-authenticate') ?? ''
  t.match(
    challenge,
    /^Bearer realm="bearward", error="insufficient_user_authentication", error_description="More recent authentication is required", max_age="300", scope="pay", /,
  )
  t.equal(up.seen.length, 1, 'the refusal reached nothing')

  const silent = authorization()
  t.notOk(await asksToSignIn(silent.url), 'without max_age the session is reused: no sign-in page')
  const token2 = await silent.redeem(await authorizeAsPerson(browser, silent.url, { username: 'alice', password: DEMO_PASSWORD }))
  t.equal(authTime(token2), signedInAt, "the reused session's old auth_time")
  t.equal((await pay(token2)).status, 401, 'so the new token is refused as well')

  const maxAge = /max_age="(\d+)"/.exec(challenge)?.[1] ?? ''
  const stepUp = authorization({ max_age: maxAge })
  t.ok(await asksToSignIn(stepUp.url), 'with the challenge max_age, alice is asked to sign in again')
  const token3 = await stepUp.redeem(await authorizeAsPerson(browser, stepUp.url, { username: 'alice', password: DEMO_PASSWORD }))
  t.equal(authTime(token3), Math.floor(clock.now() / 1000), 'the new sign-in is in the token')
  t.equal((await pay(token3)).status, 200, 'and the new token is accepted')
  t.equal(up.seen.length, 2)
})
