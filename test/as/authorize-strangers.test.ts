/**
 * Issue #28.4: /authorize errors of a client nobody here vouched for. With a
 * self-registered `redirect_uris: ["https://evil.example/landing"]` (or a
 * metadata document saying so), an erroneous request (response_type=token,
 * a bad scope, no PKCE, prompt=none) answered 302 to it before anyone signed
 * in: an open redirector on this server's name. RFC 9700 4.11.2: show the
 * error on our page, and redirect only once the person has signed in. A
 * configured client keeps the redirect.
 */
import t, { type Test } from 'tap'
import {
  authParams,
  authorizeUrl,
  Browser,
  countCodes,
  formWith,
  frontYaml,
  get,
  loggedIn,
  pkce,
  setCookies,
  startFront,
  WEB_CALLBACK,
} from '../helpers/as-front.js'
import { startClientDocuments } from '../helpers/client-documents.js'

const EVIL = 'https://evil.example/landing'
const docs = await startClientDocuments()
t.teardown(() => docs.close())
const front = await startFront(
  await frontYaml({
    asExtra: `  registration: { enabled: true, scopes: ["orders:read"], rate_limit: { per_address: 1000, window: 1h } }
${docs.configYaml(['orders:read'])}`,
  }),
)
t.teardown(() => front.close())
const codes = countCodes(front.store)

const METADATA = {
  client_name: 'Helpful Tool',
  redirect_uris: [EVIL],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code'],
  response_types: ['code'],
}
const registered = await fetch(`${front.url}/register`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(METADATA),
})
const registeredId = String(((await registered.json()) as Record<string, unknown>).client_id)
const documentId = docs.serve('/tool.json', METADATA)

const STRANGERS: ReadonlyArray<[string, string]> = [
  ['a self-registered client', registeredId],
  ['a metadata-document client', documentId],
]

/** A valid request of `clientId` to EVIL, with overrides (undefined removes a parameter). */
function request(clientId: string, over: Record<string, string | undefined> = {}): string {
  return authorizeUrl(front, authParams({ client_id: clientId, redirect_uri: EVIL, scope: 'orders:read', code_challenge: pkce().challenge, ...over }))
}

/** The erroneous requests of the issue, each with the error code it must show. */
const ERRONEOUS: ReadonlyArray<[string, Record<string, string | undefined>, string]> = [
  ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
  ['a bad scope', { scope: 'orders:read admin' }, 'invalid_scope'],
  ['a scope the client may not have', { scope: 'orders:write' }, 'invalid_scope'],
  ['no PKCE', { code_challenge: undefined, code_challenge_method: undefined }, 'invalid_request'],
  ['a plain PKCE challenge', { code_challenge_method: 'plain', code_challenge: 'a'.repeat(43) }, 'invalid_request'],
  ['prompt=none without a session', { prompt: 'none' }, 'login_required'],
]

/** Our page, not a redirect: the status, no Location, the error code, and the client's origin only as text. */
function assertShown(t: Test, res: { status: number; headers: Headers; text: string }, error: string, label: string): void {
  t.equal(res.status, 400, `${label}: 400`)
  t.equal(res.headers.get('location'), null, `${label}: no Location`)
  t.match(res.headers.get('content-type'), /^text\/html/, `${label}: a page`)
  t.match(res.text, new RegExp(`Error code: <code>${error}</code>`), `${label}: the error code`)
  // How bearward knows the client (issue #42): a metadata-document client did not register itself.
  if (label.startsWith('a metadata-document client')) {
    t.notMatch(res.text, /registered itself/, `${label}: not "registered itself"`)
    t.match(
      res.text,
      new RegExp(
        `This server read <span class="client"><bdi>[^<]*</bdi></span>’s description from <code><bdi>${new URL(documentId).host}</bdi></code>; nobody here has checked who runs it, so you are not sent back to it automatically`,
      ),
      label,
    )
  } else t.match(res.text, /registered itself with this server; nobody here has checked who runs it, so you are not sent back to it automatically/, label)
  t.match(res.text, /It said it is at <code><bdi>https:\/\/evil\.example<\/bdi><\/code>/, `${label}: where, as plain text`)
  t.notMatch(res.text, /href="https:\/\/evil/, `${label}: no link to it`)
  t.notMatch(res.text, /http-equiv/i, `${label}: no meta refresh`)
  t.equal(setCookies(res.headers).has('bw_session'), false, `${label}: no session`)
}

t.test('before anyone signs in, every erroneous request of a stranger is our page, never a redirect', async (t) => {
  for (const [who, clientId] of STRANGERS) {
    for (const [what, over, error] of ERRONEOUS) assertShown(t, await get(request(clientId, over)), error, `${who}, ${what}`)
    // POST to /authorize (OIDC Core 3.1.2.1) is the same endpoint.
    const post = await fetch(`${front.url}/authorize`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URL(request(clientId, { response_type: 'token' })).search.slice(1),
    })
    assertShown(t, { status: post.status, headers: post.headers, text: await post.text() }, 'unsupported_response_type', `${who}, POST`)
  }
  t.equal(codes.count, 0, 'nothing issued')
})

t.test('a stale or bad cookie is not a sign-in', async (t) => {
  const res = await get(request(registeredId, { response_type: 'token' }), 'bw_session=forged-session-id-0123456789abcdefghijk')
  t.equal(res.status, 400)
  t.equal(res.headers.get('location'), null)
})

t.test('a login form whose request was changed to an erroneous one: our page, and nobody signed in', async (t) => {
  for (const [who, clientId] of STRANGERS) {
    const b = new Browser()
    const url = request(clientId)
    const page = await b.get(url)
    t.equal(page.status, 200, `${who}: the login page`)
    const form = formWith(await page.text(), url, 'password')
    const tampered = new URL(request(clientId, { response_type: 'token' })).search.slice(1)
    const res = await b.submit(form, { username: 'alice', password: 'alice: correct horse battery staple', request: tampered })
    assertShown(t, { status: res.status, headers: res.headers, text: await res.text() }, 'unsupported_response_type', `${who}, login POST`)
    t.equal(b.cookies.has('bw_session'), false, `${who}: not signed in`)
  }
  t.equal(codes.count, 0, 'nothing issued')
})

t.test('a configured client keeps the redirect, as RFC 6749 4.1.2.1 says', async (t) => {
  const res = await get(authorizeUrl(front, authParams({ response_type: 'token' })))
  t.equal(res.status, 302)
  const location = new URL(res.headers.get('location') ?? '')
  t.equal(`${location.origin}${location.pathname}`, WEB_CALLBACK)
  t.equal(location.searchParams.get('error'), 'unsupported_response_type')
  const none = await get(authorizeUrl(front, authParams({ prompt: 'none' })))
  t.equal(new URL(none.headers.get('location') ?? '').searchParams.get('error'), 'login_required')
})

t.test('once the person has signed in, the error goes to the client as usual; so does a refusal on the consent page', async (t) => {
  const { browser } = await loggedIn(front)
  for (const [who, clientId] of STRANGERS) {
    for (const [what, over, error] of ERRONEOUS) {
      if (error === 'login_required') continue
      const res = await browser.get(request(clientId, over))
      t.equal(res.status, 302, `${who}, ${what}: 302`)
      const location = new URL(res.headers.get('location') ?? '')
      t.equal(`${location.origin}${location.pathname}`, EVIL, `${who}, ${what}: to its redirect URI`)
      t.equal(location.searchParams.get('error'), error, `${who}, ${what}`)
      await res.arrayBuffer()
    }
    const none = await browser.get(request(clientId, { prompt: 'none' }))
    t.equal(new URL(none.headers.get('location') ?? '').searchParams.get('error'), 'consent_required', `${who}: prompt=none with a session`)
    await none.arrayBuffer()

    const page = await browser.get(request(clientId, { state: 'deny-1' }))
    t.equal(page.status, 200, `${who}: the consent page`)
    const denied = await browser.submit(formWith(await page.text(), request(clientId), 'decision'), { decision: 'deny' })
    t.equal(denied.status, 302)
    const location = new URL(denied.headers.get('location') ?? '')
    t.equal(`${location.origin}${location.pathname}`, EVIL, `${who}: a refusal goes back to the client`)
    t.equal(location.searchParams.get('error'), 'access_denied')
    t.equal(location.searchParams.get('state'), 'deny-1')
  }
  t.equal(codes.count, 0, 'nothing issued')
})

t.test('a metadata document is held to the registration rules: a breaking redirect URI or a disguised name makes the client unknown', async (t) => {
  const documents: Array<[string, Record<string, unknown>]> = [
    ['/cr.json', { ...METADATA, redirect_uris: ['https://evil.example/landing\r\nSet-Cookie: x=1'] }],
    ['/ls.json', { ...METADATA, redirect_uris: ['https://evil.example/landing\u2028'] }],
    ['/bidi.json', { ...METADATA, client_name: 'Orders \u202Ebew' }],
    ['/zw.json', { ...METADATA, client_name: 'Pay\u200BPal' }],
  ]
  for (const [path, document] of documents) {
    const clientId = docs.serve(path, document)
    const res = await get(request(clientId, { redirect_uri: String((document.redirect_uris as string[])[0]) }))
    t.equal(res.status, 400, path)
    t.equal(res.headers.get('location'), null, `${path}: no Location`)
    t.match(res.text, /The application \(client_id\) is not registered with this server/, `${path}: an unknown client`)
  }
  t.equal(codes.count, 0, 'nothing issued')
})
