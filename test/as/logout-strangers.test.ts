/**
 * Issue #28.3: /logout was an open redirector for anyone who registers. With
 * `post_logout_redirect_uris: ["https://evil.example/x"]` registered,
 * `GET /logout?client_id=<id>&post_logout_redirect_uri=https://evil.example/x`
 * answered 303 there with no session and no id_token_hint, and a signed-in
 * person was sent there by "Sign out" and by "Stay signed in" alike; a
 * metadata-document client likewise. Now a client that described itself is
 * sent back only with an id_token_hint this server issued to it, checked at
 * the request and again at the confirmation, whichever button is pressed.
 */
import t, { type Test } from 'tap'
import { issueIdToken } from '../../src/as/issue.js'
import { hashToken } from '../../src/store/hash.js'
import { authParams, authorizeAs, authorizeUrl, Browser, formWith, frontYaml, get, startFront } from '../helpers/as-front.js'
import { startClientDocuments } from '../helpers/client-documents.js'
import { postForm, reply } from '../helpers/http.js'

const EVIL = 'https://evil.example/x'
const docs = await startClientDocuments()
t.teardown(() => docs.close())
const front = await startFront(
  await frontYaml({
    asExtra: `  registration: { enabled: true, scopes: ["orders:read"], rate_limit: { per_address: 1000, window: 1h } }
${docs.configYaml(['orders:read'])}`,
  }),
)
t.teardown(() => front.close())

const METADATA = {
  client_name: 'Helpful Tool',
  redirect_uris: ['https://evil.example/landing'],
  post_logout_redirect_uris: [EVIL],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code'],
  response_types: ['code'],
}
const registered = await fetch(`${front.url}/register`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(METADATA),
})
t.equal(registered.status, 201)
const registeredId = String(((await registered.json()) as Record<string, unknown>).client_id)
const documentId = docs.serve('/tool.json', METADATA)

const STRANGERS: ReadonlyArray<[string, string]> = [
  ['a self-registered client', registeredId],
  ['a metadata-document client', documentId],
]

function logoutUrl(params: Record<string, string>): string {
  return `${front.url}/logout?${new URLSearchParams(params).toString()}`
}

/** A browser signed in as alice (through the skip_consent client). */
async function signedIn(): Promise<Browser> {
  const b = new Browser()
  await authorizeAs(b, authorizeUrl(front, authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb', scope: 'orders:read' })))
  return b
}
const cookieOf = (b: Browser): string => [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
const sessionOf = (b: Browser) => front.store.sessions.get(hashToken(b.cookies.get('bw_session') ?? ''))

/** Refused with our page: 400, no Location. */
function assertRefused(t: Test, res: { status: number; headers: Headers; text: string }, label: string): void {
  t.equal(res.status, 400, `${label}: 400`)
  t.equal(res.headers.get('location'), null, `${label}: never redirected`)
  t.match(res.text, /An application that registered itself is sent back after sign-out only with an id_token_hint issued to it/, label)
}

t.test("the issue's request, nobody signed in: refused, not redirected", async (t) => {
  for (const [who, clientId] of STRANGERS) {
    assertRefused(t, await get(logoutUrl({ client_id: clientId, post_logout_redirect_uri: EVIL })), who)
    assertRefused(t, await get(logoutUrl({ client_id: clientId, post_logout_redirect_uri: EVIL, state: 's' })), `${who}, with state`)
    const viaPost = await reply(postForm(`${front.url}/logout`, { client_id: clientId, post_logout_redirect_uri: EVIL }, {}))
    assertRefused(t, viaPost, `${who}, POST`)
  }
})

t.test("the issue's request while someone is signed in: refused before any button is shown, and still signed in", async (t) => {
  const b = await signedIn()
  for (const [who, clientId] of STRANGERS) {
    const res = await get(logoutUrl({ client_id: clientId, post_logout_redirect_uri: EVIL }), cookieOf(b))
    assertRefused(t, res, who)
    t.notMatch(res.text, /Stay signed in/, `${who}: no confirmation to press`)
  }
  t.ok(await sessionOf(b), 'still signed in')
})

t.test('both buttons, forged with the evil URI: never redirected there, signed in or not', async (t) => {
  const b = await signedIn()
  const session = await sessionOf(b)
  if (session === null) throw new Error('not signed in')
  for (const [who, clientId] of STRANGERS) {
    for (const decision of ['logout', 'stay']) {
      // With the person's own CSRF token (the strongest forgery there is): the redirect is checked again.
      const withSession = await reply(
        postForm(
          `${front.url}/logout`,
          { csrf: session.csrf, decision, client_id: clientId, post_logout_redirect_uri: EVIL },
          { cookie: cookieOf(b), origin: front.issuer },
        ),
      )
      assertRefused(t, withSession, `${who}, ${decision}, signed in`)
      // Nobody signed in: there is no CSRF token to check, so the redirect check is all there is.
      const without = await reply(
        postForm(`${front.url}/logout`, { csrf: 'x', decision, client_id: clientId, post_logout_redirect_uri: EVIL }, { origin: front.issuer }),
      )
      assertRefused(t, without, `${who}, ${decision}, nobody signed in`)
    }
  }
  t.ok(await sessionOf(b), 'still signed in')
})

t.test('an id_token_hint issued to another client does not vouch for this one', async (t) => {
  for (const [who, clientId] of STRANGERS) {
    const other = await issueIdToken(front.as, { sub: 'user-0001', clientId: 'web', scope: 'openid', authTime: null, nonce: null, accessToken: 'unused' })
    const res = await get(logoutUrl({ client_id: clientId, post_logout_redirect_uri: EVIL, id_token_hint: other }))
    t.equal(res.status, 400, who)
    t.equal(res.headers.get('location'), null, who)
    // Without client_id the hint names its own client, whose URI this is not.
    const named = await get(logoutUrl({ post_logout_redirect_uri: EVIL, id_token_hint: other }))
    t.equal(named.status, 400, `${who}: hint alone`)
    t.equal(named.headers.get('location'), null)
  }
})

t.test('with an id_token_hint issued to it, the client takes part in RP-initiated logout', async (t) => {
  for (const [who, clientId] of STRANGERS) {
    const hint = (sub: string): Promise<string> =>
      issueIdToken(front.as, { sub, clientId, scope: 'openid', authTime: null, nonce: null, accessToken: 'unused' })

    const nobody = await get(logoutUrl({ post_logout_redirect_uri: EVIL, id_token_hint: await hint('alice'), state: 's1' }))
    t.equal(nobody.status, 303, `${who}: nobody signed in, the hint names the client`)
    t.equal(nobody.headers.get('location'), `${EVIL}?state=s1`)

    const b = await signedIn()
    const same = await get(logoutUrl({ client_id: clientId, post_logout_redirect_uri: EVIL, id_token_hint: await hint('alice') }), cookieOf(b))
    t.equal(same.status, 303, `${who}: the signed-in person's hint signs out at once`)
    t.equal(same.headers.get('location'), EVIL)
    t.equal(await sessionOf(b), null)

    // A hint of someone else: the person confirms, and both buttons carry the hint, checked again.
    for (const decision of ['stay', 'logout']) {
      const c = await signedIn()
      const url = logoutUrl({ client_id: clientId, post_logout_redirect_uri: EVIL, id_token_hint: await hint('user-0002'), state: decision })
      const page = await get(url, cookieOf(c))
      t.equal(page.status, 200, `${who}: the confirmation`)
      t.match(page.text, /<span class="client"><bdi>Helpful Tool<\/bdi><\/span> asks to sign you out/)
      const form = formWith(page.text, url, 'csrf')
      const pressed = await c.submit(form, { decision })
      t.equal(pressed.status, 303, `${who}, ${decision}`)
      t.equal(pressed.headers.get('location'), `${EVIL}?state=${decision}`, `${who}, ${decision}: the verified URI`)
      t.equal((await sessionOf(c)) === null, decision === 'logout', `${who}, ${decision}: the session as chosen`)
      // The same form with the hint taken out is refused, whichever button.
      const stripped = await c.submit({ ...form, fields: Object.fromEntries(Object.entries(form.fields).filter(([k]) => k !== 'id_token_hint')) }, { decision })
      t.equal(stripped.status, 400, `${who}, ${decision} without the hint`)
      t.equal(stripped.headers.get('location'), null)
    }
  }
})

t.test('without a redirect URI, anyone may still ask to sign the person out (the confirmation protects them)', async (t) => {
  for (const [who, clientId] of STRANGERS) {
    const b = await signedIn()
    const url = logoutUrl({ client_id: clientId })
    const page = await get(url, cookieOf(b))
    t.equal(page.status, 200, `${who}: the confirmation page`)
    const stay = await b.submit(formWith(page.text, url, 'csrf'), { decision: 'stay' })
    t.equal(stay.status, 303)
    t.equal(stay.headers.get('location'), 'account', `${who}: "Stay signed in" goes to our own account page`)
    t.ok(await sessionOf(b))
  }
})
