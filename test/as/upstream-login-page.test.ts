/**
 * The login page with identity providers: a button per provider beside the
 * local form, or alone with `local_login: false` (and then POST /login is
 * refused); a button press is a CSRF-checked POST.
 */
import t from 'tap'
import { Browser, parseForms } from '../helpers/browser.js'
import { ALICE_PASSWORD, authParams, authorizeUrl, countCodes, frontYaml, startFront } from '../helpers/as-front.js'
import { freePort } from '../helpers/http.js'

t.test('local_login: false shows only the providers and refuses passwords', async (t) => {
  const issuer = `http://127.0.0.1:${await freePort()}`
  const front = await startFront(
    await frontYaml({
      asExtra: `  local_login: false
  identity_providers:
    - { id: corp, name: "Corp <SSO>", issuer: "${issuer}", client_id: bearward }
    - { id: lab, name: Lab SSO, issuer: "${issuer}/lab", client_id: bearward }`,
    }),
  )
  t.teardown(front.close)
  const codes = countCodes(front.store)
  const browser = new Browser()
  const url = authorizeUrl(front, authParams())
  const page = await browser.get(url)
  const html = await page.text()
  t.equal(page.status, 200)
  t.notMatch(html, 'name="password"', 'no password field')
  t.match(html, 'Continue with Corp &lt;SSO&gt;', 'the provider name is escaped')
  t.match(html, 'Continue with Lab SSO')
  const forms = parseForms(html, url)
  t.same(
    forms.map((f) => [f.action, f.fields.provider]),
    [
      [`${front.url}/upstream-login`, 'corp'],
      [`${front.url}/upstream-login`, 'lab'],
    ],
  )
  t.type(forms[0]?.fields.csrf, 'string', 'each button carries the CSRF token')
  t.type(forms[0]?.fields.request, 'string', 'and the authorization request it continues')

  const login = await fetch(`${front.url}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: front.url, cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    body: new URLSearchParams({ csrf: forms[0]?.fields.csrf ?? '', request: forms[0]?.fields.request ?? '', username: 'alice', password: ALICE_PASSWORD }),
  })
  t.equal(login.status, 400, 'a password POST is refused')
  t.match(await login.text(), 'turned off')
  t.notOk(
    login.headers.getSetCookie().some((c) => c.startsWith('bw_session=')),
    'no session',
  )
  t.equal(codes.count, 0)
})

t.test('a provider button is a form POST: cross-origin or without the CSRF token it is refused, nothing stored', async (t) => {
  const issuer = `http://127.0.0.1:${await freePort()}`
  const front = await startFront(
    await frontYaml({ asExtra: `  identity_providers:\n    - { id: corp, name: Corp SSO, issuer: "${issuer}", client_id: bearward }` }),
  )
  t.teardown(front.close)
  const browser = new Browser()
  const url = authorizeUrl(front, authParams())
  const html = await (await browser.get(url)).text()
  t.match(html, 'name="password"', 'the local form is still there')
  const button = parseForms(html, url).find((f) => f.fields.provider === 'corp')
  if (!button) throw new Error('no button')
  const put = front.store.upstream.putLogin.bind(front.store.upstream)
  let stored = 0
  front.store.upstream.putLogin = async (...args) => {
    stored += 1
    return put(...args)
  }
  browser.origin = 'https://evil.example'
  t.equal((await browser.submit(button)).status, 403, 'another origin')
  browser.origin = null
  t.equal((await browser.submit(button, { csrf: 'x'.repeat(43) })).status, 403, 'a wrong CSRF token')
  t.equal((await browser.submit(button, { provider: 'nope' })).status, 400, 'an unknown provider')
  const down = await browser.submit(button)
  t.equal(down.status, 503, 'the provider is down: its page, not a redirect')
  t.match(await down.text(), 'Corp SSO is not available')
  t.equal(stored, 0, 'no pending sign-in was kept for any of them')
})
