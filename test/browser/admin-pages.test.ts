import t, { type Test } from 'tap'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { DEMO_PASSWORD, demoHashes } from '../helpers/as-config.js'
import { type BrowserAs, signIn, startBrowserAs, submitAndWait, turnOnAuthenticatorApp } from '../helpers/browser-as.js'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { freePort } from '../helpers/http.js'
import { nextCode } from '../helpers/totp-code.js'

// A real browser on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000)

/**
 * The admin pages (docs/admin.md "Pages") in Chromium through bin/bearward,
 * on admin_listen: a first-party client (`admin-pages`) of bearward's own
 * server. An admin person (in admin_api.people) with an authenticator app,
 * signed in with a password only, is sent to step up (a code) before the
 * pages let them in; they find a person, reset their second factors and sign
 * them out everywhere (each confirmed on a second page), which the person's
 * own browser then sees. A person not in admin_api.people is refused; a form
 * without the session's CSRF token, or with another session's, changes
 * nothing; the pages refuse to be framed. Every page passes PageChecker.check
 * (axe, CSP, console, no sideways scroll) at 390 and 1280 px.
 */

const ADMIN = 'leo'
/** A second admin, signed in to the pages on their own browser: their session's CSRF token and their grant. */
const OTHER_ADMIN = 'mia'
const PERSON = 'judy'
const NOT_ADMIN = 'dave'

/** Equal as the trail writes them (members in the trail's order). */
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b)

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

/** Sign `username` in on /account and turn on an authenticator app; the session stays password-only. Returns the key and the code used. */
async function enrolTotp(page: Page, as: BrowserAs, username: string): Promise<{ secret: string; used: string }> {
  await page.goto(`${as.issuer}/account`)
  await signIn(page, { username, password: DEMO_PASSWORD })
  const { secret, used } = await turnOnAuthenticatorApp(page)
  if ((await heading(page)) !== 'Your recovery codes') throw new Error(`no recovery codes for ${username}: ${await heading(page)}`)
  return { secret, used }
}

interface Setup {
  browser: Browser
  as: BrowserAs
  /** The pages' URL on admin_listen, `http://127.0.0.1:PORT/admin`. */
  pages: string
  /** The audit trail's file. */
  trail: string
}

async function start(t: Test): Promise<Setup> {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const adminPort = await freePort()
  const pages = `http://127.0.0.1:${adminPort}/admin`
  const { secretHash } = await demoHashes()
  const dir = await mkdtemp(join(tmpdir(), 'bearward-admin-pages-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const trail = join(dir, 'audit.jsonl')
  const as = await startBrowserAs((config) => {
    config.audit = { destination: `file:${trail}` }
    config.admin_listen = `127.0.0.1:${adminPort}`
    config.authorization_server.clients.push({
      client_id: 'admin-pages',
      name: 'bearward admin pages',
      type: 'confidential',
      secret_hash: secretHash,
      redirect_uris: [`${pages}/callback`],
      grant_types: ['authorization_code'],
      scopes: [],
      skip_consent: true,
    })
    config.admin_api = { enabled: true, clients: ['admin-pages'], people: [ADMIN, OTHER_ADMIN] }
  })
  t.teardown(() => as.close())
  return { browser, as, pages, trail }
}

t.test('the admin pages in Chromium', async (t) => {
  const { browser, as, pages, trail } = await start(t)

  await t.test('step up, find a person, reset factors, sign out everywhere', async (t) => {
    // The person: signed in on their own browser, with an authenticator app.
    const theirs = await openPage(browser)
    t.teardown(() => theirs.context.close())
    await enrolTotp(theirs.page, as, PERSON)

    // The other admin: signed in to the pages on their own browser (with a code).
    const other = await openPage(browser)
    t.teardown(() => other.context.close())
    const otherCodes = await enrolTotp(other.page, as, OTHER_ADMIN)
    await other.page.goto(`${pages}/`)
    await signIn(other.page, { username: OTHER_ADMIN, password: DEMO_PASSWORD })
    await other.page.getByLabel('Code', { exact: true }).fill(nextCode(otherCodes.secret, otherCodes.used))
    await submitAndWait(other.page, () => other.page.getByRole('button', { name: 'Continue' }).click())
    t.equal(await heading(other.page), 'Admin', 'the other admin is signed in to the pages')

    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const { secret, used } = await enrolTotp(page, as, ADMIN)

    // Signed in with a password only: the pages send the admin to give a code first.
    await page.goto(`${pages}/`)
    t.equal(new URL(page.url()).origin, as.issuer, 'sent to the sign-in pages, not let in')
    t.ok(await page.getByText('This application asks for a stronger sign-in.').isVisible(), 'a sign-in without a second factor is sent to step up')
    await checker.check(t, 'admin-step-up')
    await signIn(page, { username: ADMIN, password: DEMO_PASSWORD })
    t.equal(await heading(page), 'Enter your code')
    await page.getByLabel('Code', { exact: true }).fill(nextCode(secret, used))
    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue' }).click())
    t.equal(await heading(page), 'Admin')
    t.equal(page.url(), `${pages}/`)
    await checker.check(t, 'admin-home')

    // Find the person.
    await page.getByLabel('Username contains').fill(PERSON)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Search' }).first().click())
    t.equal(await heading(page), 'People')
    await checker.check(t, 'admin-people')
    await submitAndWait(page, () => page.getByRole('link', { name: PERSON, exact: true }).click())
    t.equal(await heading(page), `Person ${PERSON}`)
    t.ok(await page.getByText('An authenticator app;').isVisible(), 'their app is shown')
    await checker.check(t, 'admin-person')

    // Reset their second factors: a confirmation first, nothing changed until it is confirmed.
    await submitAndWait(page, () => page.getByRole('button', { name: 'Reset second factors' }).click())
    t.equal(await heading(page), `Reset second factors: ${PERSON}?`)
    await checker.check(t, 'admin-confirm')
    await theirs.page.goto(`${as.issuer}/account`)
    t.equal(await theirs.page.getByRole('button', { name: 'Set up an authenticator app' }).count(), 0, 'not yet removed')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Yes, reset their second factors' }).click())
    t.ok(await page.getByText('Their second factors were removed.').isVisible())
    t.ok(await page.getByText('No authenticator app;').isVisible())
    await theirs.page.goto(`${as.issuer}/account`)
    t.equal(await theirs.page.getByRole('button', { name: 'Set up an authenticator app' }).count(), 1, 'the person’s app is gone')

    // CSRF: the action without the session's token, or with another session's (the other admin's), is refused and changes nothing.
    const csrf = await page.locator('form[action="act"] input[name="csrf"]').first().inputValue()
    const otherCsrf = await other.page.locator('form[action="sign-out"] input[name="csrf"]').inputValue()
    t.not(otherCsrf, csrf, 'the other session has a token of its own')
    for (const [what, token] of [
      ['no token', null],
      ['another session’s token', otherCsrf],
    ] as const) {
      const form: Record<string, string> = { action: 'sign_out_everywhere', sub: PERSON, confirm: 'yes', ...(token === null ? {} : { csrf: token }) }
      const res = await page.request.post(`${pages}/act`, { form, maxRedirects: 0 })
      t.equal(res.status(), 403, `${what}: 403`)
    }
    await theirs.page.goto(`${as.issuer}/account`)
    t.equal(await heading(theirs.page), 'Your account', 'the refused forms ended no session')

    // Sign them out everywhere.
    await submitAndWait(page, () => page.getByRole('button', { name: 'Sign out everywhere' }).click())
    t.equal(await heading(page), `Sign out everywhere: ${PERSON}?`)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Yes, sign them out everywhere' }).click())
    t.ok(await page.getByText('Every session of theirs ended.').isVisible())
    await checker.check(t, 'admin-person-done')
    await theirs.page.goto(`${as.issuer}/account`)
    t.not(await heading(theirs.page), 'Your account', 'the person’s browser is signed out')
    t.equal(await theirs.page.getByLabel('Username').count(), 1, 'and sees the sign-in form')

    // The other admin signed in to the pages through the admin-pages client: revoke that grant.
    await page.goto(`${pages}/person?id=${OTHER_ADMIN}`)
    t.equal(await page.getByRole('button', { name: /^Revoke bearward admin pages/ }).count(), 1, 'the other admin’s grant is listed')
    await submitAndWait(page, () => page.getByRole('button', { name: /^Revoke bearward admin pages/ }).click())
    await submitAndWait(page, () => page.getByRole('button', { name: 'Yes, revoke its access' }).click())
    t.ok(await page.getByText('The grant was revoked: its tokens are refused.').isVisible())
    t.equal(await page.getByRole('button', { name: /^Revoke bearward admin pages/ }).count(), 0, 'and is gone from the list')

    // Clients: find one.
    await page.goto(`${pages}/`)
    await page.getByLabel('Client id or name contains').fill('web')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Search' }).nth(1).click())
    t.equal(await heading(page), 'Clients')
    t.ok(await page.getByRole('link', { name: 'Example Web App' }).isVisible())
    await checker.check(t, 'admin-clients')
  })

  await t.test('framing is refused', async (t) => {
    const { context, page } = await openPage(browser, 'desktop')
    t.teardown(() => context.close())
    // A page of the admin listener (a sign-in that expired) carries the pages' headers.
    const res = await page.request.get(`${pages}/callback?state=x&code=y`, { maxRedirects: 0 })
    t.equal(res.status(), 400)
    t.match(res.headers()['content-security-policy'] ?? '', /frame-ancestors 'none'/, 'CSP frame-ancestors none')
    t.equal(res.headers()['x-frame-options'], 'DENY', 'X-Frame-Options DENY')
    // And Chromium does not render the pages in a frame of another origin.
    await page.setContent(`<!doctype html><title>framing</title><iframe title="admin" src="${pages}/callback?state=x"></iframe>`)
    const frame = page.frames().find((f) => f !== page.mainFrame())
    // setContent waits for the load event, the frame's included: by then Chromium has refused it.
    t.match(frame?.url() ?? '', /^chrome-error:/, 'the frame is refused (Chromium shows its error page)')
    const home = await page.request.get(`${pages}/`, { maxRedirects: 0 })
    t.equal(home.status(), 303, 'no session: sent to sign in')
    const page403 = await page.request.post(`${pages}/act`, { form: { action: 'disable', sub: 'alice' }, maxRedirects: 0 })
    t.equal(page403.status(), 403, 'a POST without a session is refused')
    t.equal(page403.headers()['x-frame-options'], 'DENY')
    t.match(page403.headers()['content-security-policy'] ?? '', /frame-ancestors 'none'/)
  })

  await t.test('a person not in admin_api.people is refused', async (t) => {
    const { context, page, checker } = await openPage(browser, 'phone')
    t.teardown(() => context.close())
    const { secret, used } = await enrolTotp(page, as, NOT_ADMIN)
    await page.goto(`${pages}/`)
    await signIn(page, { username: NOT_ADMIN, password: DEMO_PASSWORD })
    await page.getByLabel('Code', { exact: true }).fill(nextCode(secret, used))
    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue' }).click())
    t.equal(await heading(page), 'Not an administrator')
    t.equal(new URL(page.url()).pathname, '/admin/callback')
    const again = await page.request.get(`${pages}/`, { maxRedirects: 0 })
    t.equal(again.status(), 303, 'no pages session was given')
    await checker.check(t, 'admin-refused')
  })

  await t.test('every action and refusal is in the audit trail', async (t) => {
    const lines = (await readFile(trail, 'utf8'))
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { event: string; actor: Record<string, unknown>; subject: Record<string, unknown>; reason: string | null })
    const by = { kind: 'admin', id: ADMIN, as: 'person' }
    t.ok(
      lines.some((l) => l.event === 'factor.removed' && same(l.actor, by) && l.subject.kind === 'factor' && l.subject.person === PERSON),
      `factor.removed by ${ADMIN} for ${PERSON}`,
    )
    t.ok(
      lines.some((l) => l.event === 'grant.revoked' && same(l.actor, by)),
      `grant.revoked by ${ADMIN}`,
    )
    t.ok(
      // One event per session ended, named by the session's public id (end-sessions.ts).
      lines.some((l) => l.event === 'session.ended' && same(l.actor, by) && l.reason === 'admin'),
      `session.ended by ${ADMIN}`,
    )
    const denied = lines.filter((l) => l.event === 'admin.denied').map((l) => l.reason)
    t.same(denied.filter((r) => r === 'csrf').length, 2, 'two forms refused for their CSRF token (one without, one with another session’s)')
    t.ok(denied.includes('not_admin'), 'the person not in admin_api.people')
  })
})
