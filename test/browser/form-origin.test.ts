import t from 'tap'
import type { Request } from 'playwright-core'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { authorizeRequest, signIn, startBrowserAs, submitAndWait } from '../helpers/browser-as.js'

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
t.test('Referrer-Policy no-referrer made Chromium post the login, consent and device forms with Origin: null, refused as cross-site', async (t) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const as = await startBrowserAs()
  t.teardown(() => as.close())
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
