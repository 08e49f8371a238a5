/**
 * Clickjacking and caching of the pages a signed-in person sees (docs/threat-model.md,
 * Pages): test/security/authorize-endpoint.test.ts checks the pages a stranger
 * reaches; these are the ones that hold a decision or a secret, where framing
 * (a hidden Allow button, a hidden Withdraw) or a cached copy (an authenticator
 * key) would do harm. Some set their own headers (a client logo widens img-src,
 * the authenticator setup shows a QR code), so each is loaded for real.
 */
import t, { type Test } from 'tap'
import { ALICE_PASSWORD, Browser, authParams, authorizeUrl, formWith, frontYaml, parseForms, startFront } from '../helpers/as-front.js'
import { postForm } from '../helpers/http.js'

const front = await startFront(
  await frontYaml({
    clientsExtra: `    - client_id: branded
      name: Orders Web
      type: public
      redirect_uris: [https://branded.example.com/cb]
      logo_uri: "https://cdn.example.com/orders/logo.png"
      scopes: [openid, orders:read]
    - client_id: branded-tv
      name: Branded TV
      type: public
      grant_types: [urn:ietf:params:oauth:grant-type:device_code]
      logo_uri: https://img.example.net/tv.webp
      scopes: [orders:read]
`,
  }),
)
t.teardown(() => front.close())

/** The headers every page must carry, whatever else it sets. */
function checkPageHeaders(t: Test, label: string, res: { status: number; headers: Headers }): void {
  t.match(res.headers.get('content-type'), /^text\/html/, `${label}: HTML (${res.status})`)
  t.match(res.headers.get('content-security-policy'), /(^|; )frame-ancestors 'none'(;|$)/, `${label}: CSP frame-ancestors 'none'`)
  t.equal(res.headers.get('x-frame-options'), 'DENY', `${label}: X-Frame-Options DENY`)
  t.equal(res.headers.get('x-content-type-options'), 'nosniff', `${label}: nosniff`)
  t.match(res.headers.get('cache-control'), /no-store/, `${label}: no-store`)
}

t.test('the signed-in pages forbid framing and caching too, a client logo included', async (t) => {
  const b = new Browser()
  const accountUrl = `${front.url}/account`
  const login = await b.get(accountUrl)
  const signedIn = await b.submit(formWith(await login.text(), accountUrl, 'password'), { username: 'alice', password: ALICE_PASSWORD })
  t.equal(signedIn.status, 303, 'signed in at the account page')

  const pages: Array<[string, () => Promise<Response>]> = [
    ['consent page', () => b.get(authorizeUrl(front, authParams()))],
    [
      'consent page of a client with an https logo',
      () => b.get(authorizeUrl(front, authParams({ client_id: 'branded', redirect_uri: 'https://branded.example.com/cb' }))),
    ],
    ['account page', () => b.get(accountUrl)],
  ]
  for (const [label, load] of pages) {
    const res = await load()
    const html = await res.text()
    t.equal(res.status, 200, `${label}: 200`)
    t.notMatch(html, /name="password"/, `${label}: the signed-in page, not the login form`)
    checkPageHeaders(t, label, res)
  }

  // The authenticator app setup: the page that shows the key and its QR code.
  const account = await b.get(accountUrl)
  const start = parseForms(await account.text(), accountUrl).find((f) => f.fields.action === 'start')
  if (start === undefined) throw new Error('no authenticator setup form on the account page')
  t.equal((await b.submit(start)).status, 303, 'setup started')
  const setup = await b.get(accountUrl)
  const setupHtml = await setup.text()
  t.match(setupHtml, /id="totp-secret"/, 'the page shows the key')
  checkPageHeaders(t, 'authenticator setup (the key and its QR code)', setup)

  // The device approval page of a client with a logo.
  const started = await postForm(`${front.url}/device_authorization`, { client_id: 'branded-tv', scope: 'orders:read' })
  t.equal(started.status, 200)
  const { user_code } = (await started.json()) as { user_code: string }
  const approval = await b.get(`${front.url}/device?user_code=${encodeURIComponent(user_code)}`)
  const approvalHtml = await approval.text()
  t.match(approvalHtml, /Branded TV/, 'the approval page of the device')
  checkPageHeaders(t, 'device approval page with a client logo', approval)
})
