/**
 * An outside attacker's pass over the approval page (issue #41): an agent that controls the
 * arguments tries to make the person read another call than the one bound, and a stranger tries
 * to decide without the person. Everything is checked on the page as served and in the store.
 */
import t, { type Test } from 'tap'
import type { ApprovalRecord } from '../../src/store/types.js'
import { ALICE_PASSWORD, Browser, formWith, startFront, type Front } from '../helpers/as-front.js'

async function open(f: Front, args: string, ttlSec = 300): Promise<ApprovalRecord> {
  const sub = (await f.as.people.byUsername('alice'))?.sub ?? 'alice'
  const opened = await f.as.approvals.open({
    kind: 'mcp_tool',
    sub,
    clientId: 'web',
    grantId: 'g1',
    binding: `b-${args}`,
    subject: { kind: 'mcp_tool', route: 'mcp', tool: 'pay', argumentsJson: args, reuse: 'once' },
    signIn: { acr: [], maxAgeSec: null },
    ttlSec,
  })
  if (opened.outcome === 'too_many') throw new Error('too many')
  return opened.record
}

async function signedIn(t: Test, f: Front, id: string): Promise<{ b: Browser; html: string }> {
  const url = `${f.url}/approve?id=${id}`
  const b = new Browser()
  const login = await b.get(url)
  const sent = await b.submit(formWith(await login.text(), url, 'password'), { username: 'alice', password: ALICE_PASSWORD })
  t.equal(sent.status, 303)
  const page = await b.get(url)
  t.equal(page.status, 200)
  return { b, html: await page.text() }
}

t.test('characters that show as nothing or as a plain space are written as escapes on the approval page', async (t) => {
  const f = await startFront()
  t.teardown(() => f.close())
  // Each value reads as "bob" (or "1 000", "EUR") in most fonts, but is another string to the upstream.
  const hidden: Record<string, string> = {
    'hangul filler': 'bob\u3164',
    'halfwidth hangul filler': 'bob\uffa0',
    'braille blank': 'bob\u2800',
    'variation selector': 'bob\ufe0f',
    'combining grapheme joiner': 'bo\u034fb',
    'no-break space': '1\u00a0000',
    'ideographic space': '1\u3000000',
    'variation selector supplement': 'EUR\u{e0100}',
  }
  const r = await open(f, JSON.stringify(hidden))
  const { html } = await signedIn(t, f, r.id)
  for (const [what, value] of Object.entries(hidden)) {
    const odd = [...value].find((c) => !/^[a-zA-Z0-9]$/.test(c)) as string
    t.notOk(html.includes(odd), `${what}: the character itself is not on the page`)
    const written = [...odd]
      .flatMap((c) => (c.length === 2 ? [c.charCodeAt(0), c.charCodeAt(1)] : [c.charCodeAt(0)]))
      .map((u) => `\\u${u.toString(16).padStart(4, '0')}`)
      .join('')
    t.ok(html.includes(written), `${what}: shown as ${written}`)
  }
})

t.test('a stranger, a GET with a decision, and a decision after expiry decide nothing', async (t) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const r = await open(f, '{"amount":"10"}', 60)
  const { b, html } = await signedIn(t, f, r.id)
  // A link that carries the decision: GET only shows.
  const viaGet = await b.get(`${f.url}/approve?id=${r.id}&decision=approve&csrf=x`)
  t.equal(viaGet.status, 200)
  t.equal((await f.as.approvals.get(r.id))?.status, 'pending', 'a GET decides nothing')
  // A stranger without a session posts the form.
  const form = formWith(html, `${f.url}/approve?id=${r.id}`, 'decision')
  const stranger = new Browser()
  t.equal((await stranger.submit(form, { decision: 'approve' })).status, 403, 'no session: the CSRF token matches nothing')
  t.equal((await f.as.approvals.get(r.id))?.status, 'pending')
  // The person's own form, after the approval lapsed.
  f.clock.advance(61_000)
  const late = await b.submit(form, { decision: 'approve' })
  t.equal(late.status, 404, 'lapsed: not found')
  t.equal((await f.as.approvals.get(r.id))?.status, 'expired', 'never approved')
  // An id of another shape (enumeration, injection).
  for (const id of ['', 'x', `${r.id}x`, '../account', `${r.id}%00`]) {
    t.equal((await b.get(`${f.url}/approve?id=${id}`)).status, 404, `id ${JSON.stringify(id)}: 404`)
  }
})

t.test('a CIBA approval shows its authorization details whole, not folded behind a disclosure', async (t) => {
  const f = await startFront()
  t.teardown(() => f.close())
  const sub = (await f.as.people.byUsername('alice'))?.sub ?? 'alice'
  // What matters (the amount and the payee) comes after the first 120 characters.
  const details = [
    {
      type: 'payment_initiation',
      remittanceInformationUnstructured: 'Invoice 2026-001 '.repeat(10),
      instructedAmount: { currency: 'EUR', amount: '9000.00' },
      creditorAccount: { iban: 'FR7630006000011234567890189' },
    },
  ]
  const opened = await f.as.approvals.open({
    kind: 'ciba',
    sub,
    clientId: 'web',
    grantId: null,
    binding: 'ciba-b',
    subject: { kind: 'ciba', scopes: ['openid'], bindingMessage: 'Order 42', authorizationDetailsJson: JSON.stringify(details) },
    signIn: { acr: [], maxAgeSec: null },
    ttlSec: 120,
  })
  if (opened.outcome === 'too_many') throw new Error('too many')
  const { html } = await signedIn(t, f, opened.record.id)
  const shown = /<p>In detail:<\/p>\n<pre class="detail" dir="ltr"><bdi>([^<]*)<\/bdi><\/pre>/.exec(html)?.[1] ?? ''
  t.match(shown, '&quot;amount&quot;: &quot;9000.00&quot;', 'the amount is in the open text')
  t.match(shown, 'FR7630006000011234567890189', 'so is the payee')
  t.notMatch(html, /<details class="json">/, 'nothing of it behind a closed disclosure')
})
