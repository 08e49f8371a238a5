/**
 * The approval page (issue #41, docs/approvals.md): GET/POST /approve?id=. Only the approval's person
 * decides, after a sign-in recent and strong enough; the form carries the session's CSRF token and
 * the page the pages' headers (no script, no framing); what the agent sent is shown escaped and
 * bidi-isolated. The account page lists the person's approvals and denies a pending one.
 */
import t, { type Test } from 'tap'
import type { ApprovalRecord } from '../../src/store/types.js'
import { ALICE_PASSWORD, BOB_PASSWORD, Browser, HOSTILE_NAME, formWith, parseForms, startFront, type Front } from '../helpers/as-front.js'

async function open(
  f: Front,
  o: { sub?: string; clientId?: string; args?: string; acr?: string[]; maxAgeSec?: number | null; ttlSec?: number } = {},
): Promise<ApprovalRecord> {
  const sub = o.sub ?? (await f.as.people.byUsername('alice'))?.sub ?? 'alice'
  const opened = await f.as.approvals.open({
    kind: 'mcp_tool',
    sub,
    clientId: o.clientId ?? 'web',
    grantId: 'g1',
    binding: `b-${Math.random()}`,
    subject: { kind: 'mcp_tool', route: 'mcp', tool: 'delete_order', argumentsJson: o.args ?? '{"id":7}', reuse: 'once' },
    signIn: { acr: o.acr ?? [], maxAgeSec: o.maxAgeSec === undefined ? 600 : o.maxAgeSec },
    ttlSec: o.ttlSec ?? 300,
  })
  if (opened.outcome === 'too_many') throw new Error('too many')
  return opened.record
}

/** Sign in from the approval page's own login form; returns the page after the redirect back. */
async function signInAt(t: Test, f: Front, b: Browser, id: string, username = 'alice', password = ALICE_PASSWORD): Promise<Response> {
  const url = `${f.url}/approve?id=${id}`
  const login = await b.get(url)
  const form = formWith(await login.text(), url, 'password')
  t.equal(form.fields.next, `approve:${id}`, 'the login comes back to this approval')
  const sent = await b.submit(form, { username, password })
  t.equal(sent.status, 303)
  t.equal(sent.headers.get('location'), `approve?id=${id}`)
  return b.get(url)
}

async function statusOf(f: Front, id: string): Promise<string | undefined> {
  return (await f.as.approvals.get(id))?.status
}

t.test('the person signs in, sees exactly what is asked, and approves', async (t: Test) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const hostileArgs = JSON.stringify({ note: '<img src=x onerror=alert(1)>\u202Egnp.exe', long: 'x'.repeat(400) })
  const r = await open(f, { clientId: 'hostile', args: hostileArgs })
  const b = new Browser()
  const page = await signInAt(t, f, b, r.id)
  t.equal(page.status, 200)
  t.match(page.headers.get('content-security-policy'), /frame-ancestors 'none'/)
  t.equal(page.headers.get('x-frame-options'), 'DENY')
  const html = await page.text()
  t.match(html, 'delete_order')
  t.notMatch(html, '<img src=x', 'the arguments are never markup')
  t.match(html, '&lt;img src=x onerror=alert(1)&gt;')
  t.notMatch(html, '\u202E', 'no bidi control reaches the page')
  t.match(html, '\\u202e', 'it is shown as its escape')
  t.match(html, /<details class="json">/, 'a long value is folded')
  t.match(html, '<bdi>&lt;script&gt;', 'the client name is isolated and escaped')
  t.notMatch(html, HOSTILE_NAME)

  const form = formWith(html, `${f.url}/approve?id=${r.id}`, 'decision')
  const forged = await b.submit(form, { csrf: 'not-the-token', decision: 'approve' })
  t.equal(forged.status, 403, 'a wrong CSRF token decides nothing')
  t.equal(await statusOf(f, r.id), 'pending')
  b.origin = 'https://evil.example'
  t.equal((await b.submit(form, { decision: 'approve' })).status, 403, 'a form from another origin decides nothing')
  b.origin = null
  t.equal(await statusOf(f, r.id), 'pending')

  const done = await b.submit(form, { decision: 'approve' })
  t.equal(done.status, 200)
  t.match(await done.text(), 'You approved the request')
  const after = await f.as.approvals.get(r.id)
  t.equal(after?.status, 'approved')
  t.equal(after?.expiresAt, Math.floor(f.clock.now() / 1000) + 300, 'it lasts the ttl from the decision')
  t.equal((await b.submit(form, { decision: 'deny' })).status, 200, 'decided once: the page says so')
  t.equal(await statusOf(f, r.id), 'approved', 'a second decision changes nothing')
})

t.test('another person gets a clear refusal and decides nothing', async (t: Test) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const r = await open(f)
  const bob = new Browser()
  const page = await signInAt(t, f, bob, r.id, 'bob', BOB_PASSWORD)
  t.equal(page.status, 403)
  t.match(await page.text(), 'This request is for another person')
  const account = await bob.get(`${f.url}/account`)
  const csrf = parseForms(await account.text(), `${f.url}/account`).find((x) => 'csrf' in x.fields)?.fields.csrf ?? ''
  const res = await fetch(`${f.url}/approve`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: [...bob.cookies].map(([k, v]) => `${k}=${v}`).join('; '), 'content-type': 'application/x-www-form-urlencoded', origin: f.url },
    body: new URLSearchParams({ csrf, id: r.id, decision: 'approve' }),
  })
  t.equal(res.status, 403, 'bob’s own valid form is refused too')
  t.equal(await statusOf(f, r.id), 'pending')
})

t.test('a sign-in older than max_age, or weaker than the acr, must be done again', async (t: Test) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const r = await open(f, { maxAgeSec: 60 })
  const b = new Browser()
  t.equal((await signInAt(t, f, b, r.id)).status, 200)
  f.clock.advance(61_000)
  const stale = await b.get(`${f.url}/approve?id=${r.id}`)
  const html = await stale.text()
  t.match(html, 'needs a recent sign-in')
  t.ok('password' in (parseForms(html, `${f.url}/approve?id=${r.id}`).find((x) => 'password' in x.fields)?.fields ?? {}), 'the login form')
  const strong = await open(f, { acr: ['mfa'] })
  const weak = await b.get(`${f.url}/approve?id=${strong.id}`)
  t.equal(weak.status, 403, 'password alone does not meet mfa, and alice has no second factor to give')
  t.match(await weak.text(), 'two factors')
  t.equal(await statusOf(f, strong.id), 'pending')
})

t.test('unknown, malformed and lapsed approvals are a plain not-found page', async (t: Test) => {
  const f = await startFront()
  t.teardown(() => f.close())
  t.equal((await fetch(`${f.url}/approve?id=nope`)).status, 404)
  t.equal((await fetch(`${f.url}/approve?id=${'A'.repeat(22)}`)).status, 404)
  const r = await open(f, { ttlSec: 10 })
  const b = new Browser()
  await signInAt(t, f, b, r.id)
  f.clock.advance(11_000)
  t.equal((await b.get(`${f.url}/approve?id=${r.id}`)).status, 404)
  t.equal(await statusOf(f, r.id), 'expired')
})

t.test('the account page lists approvals and denies a pending one', async (t: Test) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const pending = await open(f)
  const given = await open(f)
  const b = new Browser()
  await signInAt(t, f, b, given.id)
  const approveForm = formWith(await (await b.get(`${f.url}/approve?id=${given.id}`)).text(), `${f.url}/approve?id=${given.id}`, 'decision')
  await b.submit(approveForm, { decision: 'approve' })
  const account = await (await b.get(`${f.url}/account`)).text()
  t.match(account, 'id="approvals"')
  t.match(account, 'Waiting for you')
  t.match(account, 'Approved')
  const deny = parseForms(account, `${f.url}/account`).find((x) => x.fields.deny_approval === pending.id)
  if (deny === undefined) throw new Error('no deny form')
  t.notOk(
    parseForms(account, `${f.url}/account`).some((x) => x.fields.deny_approval === given.id),
    'no Deny on a given one',
  )
  const res = await b.submit(deny, { decision: 'deny' })
  t.equal(res.status, 303)
  t.equal(await statusOf(f, pending.id), 'denied')
  t.equal(await statusOf(f, given.id), 'approved')
})

t.test('revoking a grant cancels its approvals; withdrawing everything cancels the person’s', async (t: Test) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const { revokeGrant } = await import('../../src/as/revocation.js')
  const { withdrawAllAccess } = await import('../../src/as/withdraw-access.js')
  const r = await open(f)
  const other = await open(f, { clientId: 'spa' })
  await revokeGrant(f.as, 'g1', Math.floor(f.clock.now() / 1000) + 600)
  t.equal(await statusOf(f, r.id), 'cancelled')
  t.equal(await statusOf(f, other.id), 'cancelled', 'both were of grant g1')
  const later = await open(f)
  await withdrawAllAccess(f.as, later.sub)
  t.equal(await statusOf(f, later.id), 'cancelled')
})
