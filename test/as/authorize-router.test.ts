import t from 'tap'
import { ALICE_PASSWORD, Browser, authParams, authorizeAs, formWith, pkce, startFront } from '../helpers/as-front.js'

/**
 * The front channel mounted in the real AS router (src/as/server.ts), with
 * the back channel redeeming what the pages produce: a code at /token, and a
 * device approval by polling /token. Checks that the CodeRecord and the
 * device decision are what the back channel expects.
 */

const served = await startFront()
const _clock = served.clock
t.teardown(() => served.close())

async function form(path: string, fields: Record<string, string>): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${served.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  })
  return { status: res.status, json: (await res.json()) as Record<string, unknown> }
}

t.test('a code from the pages is redeemed at /token', async (t) => {
  const { verifier, challenge } = pkce()
  const params = authParams({ client_id: 'spa', redirect_uri: 'https://spa.example.com/cb', scope: 'openid orders:read', code_challenge: challenge })
  const browser = new Browser()
  const callback = await authorizeAs(browser, `${served.url}/authorize?${new URLSearchParams(params).toString()}`)
  t.equal(callback.searchParams.get('iss'), served.url)
  const res = await form('/token', {
    grant_type: 'authorization_code',
    code: callback.searchParams.get('code') ?? '',
    redirect_uri: 'https://spa.example.com/cb',
    code_verifier: verifier,
    client_id: 'spa',
  })
  t.equal(res.status, 200, JSON.stringify(res.json))
  t.type(res.json.access_token, 'string')
  t.type(res.json.id_token, 'string')
  const idToken = JSON.parse(Buffer.from(String(res.json.id_token).split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>
  t.equal(idToken.nonce, params.nonce, 'the nonce travelled in the code')
  t.equal(idToken.sub, 'alice')
})

t.test('a device approved on the page gets tokens', async (t) => {
  const start = await form('/device_authorization', { client_id: 'tv', scope: 'orders:read' })
  t.equal(start.status, 200)
  const complete = String(start.json.verification_uri_complete)
  t.equal(complete, `${served.url}/device?user_code=${String(start.json.user_code)}`)
  const browser = new Browser()
  const login = await browser.get(complete)
  const html = await login.text()
  t.match(html, new RegExp(String(start.json.user_code)))
  const loggedIn = await browser.submit(formWith(html, complete, 'password'), { username: 'alice', password: ALICE_PASSWORD })
  t.equal(loggedIn.status, 303)
  const confirmUrl = new URL(loggedIn.headers.get('location') ?? '', complete).toString()
  const confirm = await browser.get(confirmUrl)
  const done = await browser.submit(formWith(await confirm.text(), confirmUrl, 'decision'), { decision: 'allow' })
  t.match(await done.text(), /Device connected/)
  const tokens = await form('/token', {
    grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
    device_code: String(start.json.device_code),
    client_id: 'tv',
  })
  t.equal(tokens.status, 200, JSON.stringify(tokens.json))
  t.type(tokens.json.access_token, 'string')
})

t.test('the router serves the pages as HTML, never JSON', async (t) => {
  const res = await fetch(`${served.url}/authorize?client_id=nobody`)
  t.equal(res.status, 400)
  t.match(res.headers.get('content-type'), /^text\/html/)
  const css = await fetch(`${served.url}/assets/bearward.css`)
  t.equal(css.headers.get('content-type'), 'text/css; charset=utf-8')
})
