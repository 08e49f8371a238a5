import t from 'tap'
import type { Request } from 'playwright-core'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { ALICE, authorizeRequest, signIn, startBrowserAs, submitAndWait } from '../helpers/browser-as.js'
import { escapeHtml } from '../../src/as/views/html.js'
import { startUpstream } from '../helpers/upstream.js'

// A real browser on a 2-core machine shared with the rest of the suite:
// more than tap's default per-file timeout.
t.setTimeout(300_000)

/**
 * Regression (issue 15): every page was served with `Referrer-Policy:
 * no-referrer`, under which Chromium serializes a form POST's `Origin` as
 * `null`; the CSRF origin check (rightly) refuses `null`, so nobody could sign
 * in, allow an application or enter a device code: each form answered "This
 * form has expired". With `same-origin` the posts carry our origin, and a
 * client's redirect_uri still gets no Referer.
 */
const browser = await launchChromium()
t.teardown(() => browser.close())
const as = await startBrowserAs()
t.teardown(() => as.close())

t.test('Referrer-Policy no-referrer made Chromium post the login, consent and device forms with Origin: null, refused as cross-site', async (t) => {
  const { context, page } = await openPage(browser, 'phone')
  t.teardown(() => context.close())

  const posts: Request[] = []
  page.on('request', (r) => {
    if (r.method() === 'POST') posts.push(r)
  })
  const originOfLastPost = async (path: string): Promise<string | null> => {
    const post = posts.at(-1)
    t.equal(post === undefined ? null : new URL(post.url()).pathname, path, `the form posted to ${path}`)
    return (await post?.headerValue('origin')) ?? null
  }

  const heading = (): Promise<string | null> => page.locator('h1').textContent()

  const request = authorizeRequest(as)
  await page.goto(request.url)
  await signIn(page)
  t.equal(await originOfLastPost('/login'), as.issuer, 'the login POST carries our origin, not null')
  // The page has loaded (submitAndWait): read its heading now rather than
  // wait for one, so the regression fails fast.
  if (!t.equal(await heading(), 'Allow Example Web App to access your account?', 'signed in: the consent page, not "This form has expired"')) return

  await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())
  t.equal(await originOfLastPost('/consent'), as.issuer, 'the consent POST carries our origin')
  const back = new URL(page.url())
  t.equal(back.origin + back.pathname, as.callback, 'allowed: the browser is back at the client')
  t.equal(back.searchParams.get('state'), request.state, 'with the state')
  t.ok(back.searchParams.get('code'), 'with a code')
  const arrival = as.callbacks.find((r) => r.url.startsWith('/callback?'))
  t.ok(arrival, 'the client received the redirect')
  t.equal(arrival?.headers.referer, undefined, 'the client gets no Referer: nothing of our pages leaks cross-site')

  const started = await fetch(`${as.issuer}/device_authorization`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: 'cli', scope: 'orders:read' }),
  })
  const device = (await started.json()) as { user_code: string; verification_uri: string }
  await page.goto(device.verification_uri)
  await page.getByLabel('Code').fill(device.user_code)
  await submitAndWait(page, () => page.getByRole('button', { name: 'Continue' }).click())
  t.equal(await originOfLastPost('/device'), as.issuer, 'the device code POST carries our origin')
  if (!t.equal(await heading(), 'Connect a device to your account?', 'the code was accepted')) return
  await submitAndWait(page, () => page.getByRole('button', { name: 'Allow' }).click())
  t.equal(await originOfLastPost('/device'), as.issuer, 'the device consent POST carries our origin')
  t.equal(await heading(), 'Device connected', 'the device is connected')
})

/**
 * The fix must not loosen the check. Another origin on the same site (here
 * 127.0.0.1 on another port: its POSTs carry the SameSite=Lax cookie) that
 * even knows the form's token, and a sandboxed frame (which sends `Origin:
 * null`), both post a login with the right password: both are refused, and
 * nobody is signed in.
 */
t.test('the Origin check stays strict: a form on a sibling origin and one in a sandboxed frame (Origin: null) sign nobody in', async (t) => {
  let forged = ''
  const attacker = await startUpstream('attacker', (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(forged)
  })
  t.teardown(() => attacker.close())
  const { context, page, checker } = await openPage(browser)
  t.teardown(() => context.close())

  const request = authorizeRequest(as)
  await page.goto(request.url)
  // The login form's own hidden fields (CSRF token, pending request), as a sibling that could read them would copy them.
  const fields: Array<[string, string]> = []
  for (const input of await page.locator('form input[type="hidden"]').all()) {
    fields.push([(await input.getAttribute('name')) ?? '', (await input.getAttribute('value')) ?? ''])
  }
  fields.push(['username', ALICE.username], ['password', ALICE.password])
  const form = `<form method="post" action="${as.issuer}/login">${fields
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('')}<button type="submit">Go</button></form>`

  forged = `<!doctype html><html lang="en"><title>sibling</title><main>${form}</main></html>`
  await page.goto(`${attacker.url}/sibling`)
  const siblingPost = page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === `${as.issuer}/login`)
  await submitAndWait(page, () => page.getByRole('button', { name: 'Go' }).click())
  const refused = await siblingPost
  t.equal(await refused.request().headerValue('origin'), attacker.url, 'the sibling origin posts with its own Origin')
  t.equal(await refused.request().headerValue('sec-fetch-site'), 'same-site', 'same site')
  t.match(await refused.request().headerValue('cookie'), /bw_csrf=/, 'so the SameSite=Lax CSRF cookie went along')
  t.equal(refused.status(), 403, 'refused although the token and the password are right')
  t.equal(await page.locator('h1').textContent(), 'This form has expired', 'the person sees why')
  await checker.check(t, 'form-refused')

  forged = `<!doctype html><html lang="en"><title>sandboxed</title><main><iframe title="form" sandbox="allow-forms" srcdoc="${escapeHtml(form)}"></iframe></main></html>`
  await page.goto(`${attacker.url}/sandboxed`)
  const nullPost = page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === `${as.issuer}/login`)
  await page.frameLocator('iframe').getByRole('button', { name: 'Go' }).click()
  const refusedNull = await nullPost
  t.equal(await refusedNull.request().headerValue('origin'), 'null', 'a sandboxed frame posts Origin: null')
  t.equal(refusedNull.status(), 403, 'Origin: null is refused')

  await page.goto(request.url)
  t.equal(await page.locator('h1').textContent(), 'Sign in', 'nobody was signed in: the login page again')
})
