/**
 * The approval page (issue #41, docs/approvals.md) in Chromium: alice opens the page, signs in, sees
 * the tool and its arguments, approves; bob, signed in, gets the refusal and no form; a form whose
 * CSRF token was changed decides nothing. Every page passes PageChecker.check (no console error, no
 * CSP violation, no horizontal scroll, axe) and leaves its screenshot; alice's pages are checked at
 * a phone's and a laptop's width, bob's at a laptop's.
 */
import t, { type Test } from 'tap'
import type { Page } from 'playwright-core'
import { launchChromium, openPage } from '../helpers/chromium.js'
import { submitAndWait } from '../helpers/browser-as.js'
import { ALICE_PASSWORD, BOB_PASSWORD, startFront, type Front } from '../helpers/as-front.js'

t.setTimeout(300_000)

async function open(f: Front): Promise<string> {
  const sub = (await f.as.people.byUsername('alice'))?.sub ?? 'alice'
  const opened = await f.as.approvals.open({
    kind: 'mcp_tool',
    sub,
    clientId: 'web',
    grantId: 'g1',
    binding: `b-${Math.random()}`,
    subject: { kind: 'mcp_tool', route: 'mcp', tool: 'delete_order', argumentsJson: '{"id":"42","reason":"duplicate order"}', reuse: 'once' },
    signIn: { acr: [], maxAgeSec: 600 },
    ttlSec: 300,
  })
  if (opened.outcome === 'too_many') throw new Error('too many')
  return opened.record.id
}

async function signIn(page: Page, username: string, password: string): Promise<void> {
  await page.getByLabel('Username').fill(username)
  await page.getByLabel('Password').fill(password)
  await submitAndWait(page, () => page.getByRole('button', { name: 'Sign in' }).click())
}

t.test('the approval page in Chromium', async (t: Test) => {
  const browser = await launchChromium()
  t.teardown(() => browser.close())
  const f = await startFront()
  t.teardown(() => f.close())

  await t.test('alice signs in on the page and approves', async (t) => {
    const id = await open(f)
    const { context, page, checker } = await openPage(browser)
    t.teardown(() => context.close())
    await page.goto(`${f.url}/approve?id=${id}`)
    await signIn(page, 'alice', ALICE_PASSWORD)
    t.equal(await page.locator('h1').textContent(), 'Approve this request?')
    t.match(await page.locator('main').textContent(), /delete_order[\s\S]*"duplicate order"/)
    t.match(await page.locator('.lead').textContent(), /the tool delete_order of mcp for you/, 'the page names the route the call goes to')
    await checker.check(t, 'approve', { replace: { [id]: 'fixed-approval-id-00000' } })
    await submitAndWait(page, () => page.getByRole('button', { name: 'Approve' }).click())
    t.equal(await page.locator('h1').textContent(), 'Approved')
    await checker.check(t, 'approve-done')
    t.equal((await f.as.approvals.get(id))?.status, 'approved')
  })

  await t.test('bob is refused; a changed CSRF token decides nothing', async (t) => {
    const id = await open(f)
    const { context, page, checker } = await openPage(browser, 'desktop')
    t.teardown(() => context.close())
    await page.goto(`${f.url}/approve?id=${id}`)
    await signIn(page, 'bob', BOB_PASSWORD)
    t.equal(await page.locator('h1').textContent(), 'Not your request')
    t.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0, 'no form to approve with')
    await checker.check(t, 'approve-other-person')
    t.equal((await f.as.approvals.get(id))?.status, 'pending')

    const alice = await openPage(browser, 'desktop')
    t.teardown(() => alice.context.close())
    await alice.page.goto(`${f.url}/approve?id=${id}`)
    await signIn(alice.page, 'alice', ALICE_PASSWORD)
    await alice.page.locator('input[name="csrf"]').evaluate((input) => {
      ;(input as { value: string }).value = 'forged'
    })
    await submitAndWait(alice.page, () => alice.page.getByRole('button', { name: 'Approve' }).click())
    t.equal(await alice.page.locator('h1').textContent(), 'This form has expired')
    t.equal((await f.as.approvals.get(id))?.status, 'pending', 'nothing decided')
  })
})
