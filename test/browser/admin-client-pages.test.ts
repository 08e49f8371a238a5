import t, { type Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { accessTokenOf, adminToken, basic } from '../helpers/admin-api.js'
import { DEMO_PASSWORD, DEMO_SECRET, demoHashes } from '../helpers/as-config.js'
import { authorizeAsPerson, Browser as HttpBrowser } from '../helpers/browser.js'
import { type BrowserAs, signIn, startBrowserAs, submitAndWait, turnOnAuthenticatorApp } from '../helpers/browser-as.js'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { freePort, reply } from '../helpers/http.js'
import { form } from '../helpers/store-pair.js'
import { nextCode } from '../helpers/totp-code.js'

// A real browser on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000)

/**
 * The admin pages' client tasks (docs/admin.md "Pages") in Chromium through
 * bin/bearward: an admin person, stepped up with a second factor, finds an
 * admin-managed client, rotates its secret (a confirmation first; the new
 * secret shown once, the old one still good), and revokes a grant a person
 * gave a client from that client's page. A forged form changes nothing.
 * Every page passes PageChecker.check (axe, CSP, console, no sideways
 * scroll), each checked at 390 and 1280 px; the actions are in the audit
 * trail.
 */

const ADMIN = 'leo'
const PERSON = 'judy'
/** The admin-managed client; its id is the one the screenshots have always shown. */
const CLIENT_ID = 'billing-phone'

const heading = (page: Page): Promise<string | null> => page.locator('h1').textContent()

async function enrolTotp(page: Page, as: BrowserAs, username: string): Promise<{ secret: string; used: string }> {
  await page.goto(`${as.issuer}/account`)
  await signIn(page, { username, password: DEMO_PASSWORD })
  const { secret, used } = await turnOnAuthenticatorApp(page)
  if ((await heading(page)) !== 'Your recovery codes') throw new Error(`no recovery codes for ${username}: ${await heading(page)}`)
  return { secret, used }
}

async function start(t: Test): Promise<{ browser: Browser; as: BrowserAs; pages: string; trail: string }> {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const adminPort = await freePort()
  const pages = `http://127.0.0.1:${adminPort}/admin`
  const { secretHash } = await demoHashes()
  const dir = await mkdtemp(join(tmpdir(), 'bearward-admin-client-pages-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const trail = join(dir, 'audit.jsonl')
  const as = await startBrowserAs((config) => {
    config.audit = { destination: `file:${trail}` }
    config.admin_listen = `127.0.0.1:${adminPort}`
    config.authorization_server.clients.push(
      {
        client_id: 'admin-pages',
        name: 'bearward admin pages',
        type: 'confidential',
        secret_hash: secretHash,
        redirect_uris: [`${pages}/callback`],
        grant_types: ['authorization_code'],
        scopes: [],
        skip_consent: true,
      },
      { client_id: 'ops', type: 'confidential', secret_hash: secretHash, grant_types: ['client_credentials'], scopes: [] },
    )
    config.admin_api = { enabled: true, clients: ['admin-pages', 'ops'], people: [ADMIN] }
  })
  t.teardown(() => as.close())
  return { browser, as, pages, trail }
}

/** A person's access token through the `web` client's code flow. */
async function personToken(as: BrowserAs, username: string): Promise<string> {
  const verifier = randomBytes(32).toString('base64url')
  const url = `${as.issuer}/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: as.callback,
    scope: 'openid orders:read',
    state: 's',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })}`
  const cb = await authorizeAsPerson(new HttpBrowser(), url, { username, password: DEMO_PASSWORD })
  const res = await form(
    `${as.issuer}/token`,
    { grant_type: 'authorization_code', code: cb.searchParams.get('code') ?? '', redirect_uri: as.callback, code_verifier: verifier },
    basic('web', DEMO_SECRET),
  )
  return String(((await res.json()) as { access_token: string }).access_token)
}

t.test('the admin pages’ client tasks in Chromium', async (t) => {
  const { browser, as, pages, trail } = await start(t)
  const ops = accessTokenOf(await adminToken(as.issuer, 'ops', 'bearward:admin'))
  const api = (method: string, path: string, body?: unknown) =>
    reply(
      fetch(`${as.bin.admin}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${ops}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }),
    )
  const ccStatus = async (id: string, secret: string) =>
    (await form(`${as.issuer}/token`, { grant_type: 'client_credentials', scope: 'orders:read' }, basic(id, secret))).status

  await t.test('find a client, rotate its secret, revoke a grant of a client', async (t) => {
    const created = await api('POST', '/clients', {
      client_id: CLIENT_ID,
      client_name: 'Billing job',
      grant_types: ['client_credentials'],
      scope: 'orders:read',
    })
    t.equal(created.status, 201, created.text)
    const oldSecret = String(created.json?.client_secret)
    const personAccess = await personToken(as, PERSON)
    const orders = () => reply(fetch(`${as.issuer}/orders`, { headers: { authorization: `Bearer ${personAccess}` } }))
    t.equal((await orders()).status, 200, 'the person’s token works before')

    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    const { secret, used } = await enrolTotp(page, as, ADMIN)
    await page.goto(`${pages}/`)
    await signIn(page, { username: ADMIN, password: DEMO_PASSWORD })
    await page.getByLabel('Code', { exact: true }).fill(nextCode(secret, used))
    await submitAndWait(page, () => page.getByRole('button', { name: 'Continue' }).click())
    t.equal(await heading(page), 'Admin')

    // Find the admin-managed client by its id.
    await page.getByLabel('Client id or name contains').fill(CLIENT_ID)
    await submitAndWait(page, () => page.getByRole('button', { name: 'Search' }).nth(1).click())
    t.equal(await heading(page), 'Clients')
    await submitAndWait(page, () => page.getByRole('link', { name: 'Billing job' }).click())
    t.equal(await heading(page), `Client ${CLIENT_ID}`)
    t.ok(await page.getByText('from the admin API').isVisible())
    await checker.check(t, 'admin-client')

    // Rotate: a confirmation first, nothing changed until it is confirmed.
    await submitAndWait(page, () => page.getByRole('button', { name: 'Rotate the secret' }).click())
    t.equal(await heading(page), `Rotate the secret: client ${CLIENT_ID}?`)
    await checker.check(t, 'admin-client-confirm')
    t.equal((await api('GET', `/clients/${CLIENT_ID}`)).json?.revision, 1, 'not rotated before the confirmation')

    // A forged confirmation (no CSRF token) is refused and rotates nothing.
    const forged = await page.request.post(`${pages}/act`, { form: { action: 'rotate_secret', client_id: CLIENT_ID, confirm: 'yes' }, maxRedirects: 0 })
    t.equal(forged.status(), 403)
    t.equal((await api('GET', `/clients/${CLIENT_ID}`)).json?.revision, 1, 'the forged form rotated nothing')

    await submitAndWait(page, () => page.getByRole('button', { name: 'Yes, rotate the secret' }).click())
    t.equal(await heading(page), `New secret of ${CLIENT_ID}`)
    const newSecret = await page.getByLabel('New client secret').inputValue()
    t.ok(newSecret.length >= 32, 'the new secret is shown')
    const until = (await page.locator('time').textContent()) ?? ''
    t.match(until, /^\d{1,2} \w+ \d{4}, \d\d:\d\d UTC$/, 'when the old secret stops working')
    await checker.check(t, 'admin-client-secret', {
      replace: { [newSecret]: 'NEW-SECRET-SHOWN-ONCE', [until]: '2 January 2026, 09:30 UTC' },
    })
    t.equal(await ccStatus(CLIENT_ID, newSecret), 200, 'the new secret works')
    t.equal(await ccStatus(CLIENT_ID, oldSecret), 200, 'the old one too, for its overlap')
    await page.goto(`${pages}/client?id=${CLIENT_ID}`)
    t.equal(await page.getByText(newSecret).count(), 0, 'the secret is not shown again')

    // Revoke a grant from the client's page: `web`, which the person allowed.
    await page.goto(`${pages}/client?id=web`)
    const revoke = page.getByRole('button', { name: `Revoke ${PERSON}’s grant` })
    t.equal(await revoke.count(), 1, 'the person’s grant is listed on the client’s page')
    await submitAndWait(page, () => revoke.click())
    t.equal(await heading(page), 'Revoke access: a grant of client web?')
    await submitAndWait(page, () => page.getByRole('button', { name: 'Yes, revoke its access' }).click())
    t.ok(await page.getByText('The grant was revoked: its tokens are refused.').isVisible())
    t.equal(await page.getByRole('button', { name: `Revoke ${PERSON}’s grant` }).count(), 0, 'and it is gone from the list')
    await checker.check(t, 'admin-client-done')
    t.equal((await orders()).status, 401, 'the person’s token is refused')
  })

  await t.test('the actions are in the audit trail, without the secrets', async (t) => {
    await as.bin.stop()
    const text = await readFile(trail, 'utf8')
    const lines = text
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as { event: string; actor: Record<string, unknown>; subject: Record<string, unknown> })
    const by = JSON.stringify({ kind: 'admin', id: ADMIN, as: 'person' })
    t.ok(
      lines.some((l) => l.event === 'client.secret_rotated' && JSON.stringify(l.actor) === by && l.subject.id === CLIENT_ID),
      `client.secret_rotated by ${ADMIN}`,
    )
    t.ok(
      lines.some((l) => l.event === 'grant.revoked' && JSON.stringify(l.actor) === by),
      `grant.revoked by ${ADMIN}`,
    )
  })
})
