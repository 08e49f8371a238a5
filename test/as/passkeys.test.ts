import t from 'tap'
import { hashToken } from '../../src/store/hash.js'
import { PASSKEY_FAILED } from '../../src/as/interaction/passkeys.js'
import { ALICE_PASSWORD, Browser, formWith, frontYaml, parseForms, startFront, type Front } from '../helpers/as-front.js'

/**
 * The passkey endpoints over HTTP, as a stranger reaches them: the options
 * endpoint hands out a challenge only to a form of ours (same origin, CSRF
 * token), a posted credential that is not exactly a WebAuthn response is
 * refused before any cryptography, a challenge is answered once, and the
 * account page's add and remove act only for the signed-in person. The
 * ceremonies themselves run in Chromium (test/browser/passkeys.test.ts).
 */

const yaml = await frontYaml({ asExtra: '  webauthn: { rp_id: localhost, origins: ["http://localhost:8080"] }\n' })
const front: Front = await startFront(yaml)
t.teardown(() => front.close())
const off: Front = await startFront(await frontYaml())
t.teardown(() => off.close())

const cookieOf = (b: Browser): string => [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ')

/** The account login page in a fresh browser: its passkey form and the pre-session CSRF token. */
async function loginPage(f: Front): Promise<{ b: Browser; res: Response; html: string; csrf: string }> {
  const b = new Browser()
  const res = await b.get(`${f.url}/account`)
  const html = await res.text()
  const csrf = formWith(html, `${f.url}/account`, 'password').fields.csrf ?? ''
  return { b, res, html, csrf }
}

async function post(f: Front, path: string, fields: Record<string, string>, cookie: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${f.url}/${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...headers },
    body: new URLSearchParams(fields),
  })
}

t.test('the login page offers a passkey with its one script, allowed by its exact URL', async (t) => {
  const { html, res } = await loginPage(front)
  const form = parseForms(html, `${front.url}/account`).find((f) => f.action.endsWith('/passkey-login'))
  t.ok(form, 'a passkey form')
  t.same(Object.keys(form?.fields ?? {}).sort(), ['credential', 'csrf', 'next'], 'carrying the CSRF token and what the sign-in continues')
  t.match(html, '<script src="assets/passkeys.js" defer></script>')
  t.match(html, 'autocomplete="username webauthn"')
  const csp = res.headers.get('content-security-policy') ?? ''
  t.match(csp, `script-src ${front.issuer}/assets/passkeys.js; connect-src ${front.issuer}/passkey-options`)
  t.notMatch(csp, /unsafe-inline|script-src[^;]*'self'/, 'no inline script, not every script of the origin')
  const js = await fetch(`${front.url}/assets/passkeys.js`)
  t.equal(js.status, 200)
  t.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8')
  t.equal(js.headers.get('x-content-type-options'), 'nosniff')
  t.match(await js.text(), 'navigator.credentials.get')
})

t.test('on an IP-address public_url passkeys are off: no form, no script, no endpoint', async (t) => {
  const { html, res, csrf, b } = await loginPage(off)
  t.notMatch(html, 'passkey')
  t.notMatch(res.headers.get('content-security-policy') ?? '', 'script-src')
  const opts = await post(off, 'passkey-options', { purpose: 'sign-in', csrf }, cookieOf(b))
  t.equal(opts.status, 404)
})

t.test('passkey-options: a challenge only for our own form', async (t) => {
  const { b, csrf } = await loginPage(front)
  const before = front.store.size
  const refusals: Array<[string, Response]> = [
    ['no CSRF token', await post(front, 'passkey-options', { purpose: 'sign-in' }, cookieOf(b))],
    ['a wrong CSRF token', await post(front, 'passkey-options', { purpose: 'sign-in', csrf: `${csrf}x` }, cookieOf(b))],
    ['the token without its cookie', await post(front, 'passkey-options', { purpose: 'sign-in', csrf }, '')],
    ['another site', await post(front, 'passkey-options', { purpose: 'sign-in', csrf }, cookieOf(b), { origin: 'https://evil.example' })],
    ['registration without a session', await post(front, 'passkey-options', { purpose: 'register', csrf }, cookieOf(b))],
  ]
  for (const [what, res] of refusals) t.equal(res.status, 403, `${what}: 403`)
  t.equal((await post(front, 'passkey-options', { purpose: 'admin', csrf }, cookieOf(b))).status, 400, 'an unknown purpose: 400')
  t.equal(front.store.size, before, 'no challenge was stored for any of them')

  const ok = await post(front, 'passkey-options', { purpose: 'sign-in', csrf }, cookieOf(b))
  t.equal(ok.status, 200)
  t.equal(ok.headers.get('cache-control'), 'no-store')
  const options = (await ok.json()) as { challenge: string; rpId: string; userVerification: string; allowCredentials?: unknown[] }
  t.equal(options.rpId, 'localhost')
  t.equal(options.userVerification, 'required', 'a passkey alone must verify the person')
  t.same(options.allowCredentials ?? [], [], 'discoverable: no credential ids are given away')
  t.same(
    await front.store.passkeys.takeChallenge(hashToken(options.challenge)),
    { purpose: 'sign-in', sub: null, expiresAt: Math.floor(front.clock.now() / 1000) + 300 },
    'kept under its hash for 5 minutes',
  )
})

/** A well-formed assertion around `challenge`: right shape, nonsense signature. */
function assertion(challenge: string, id = 'AAAA'): string {
  const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin: 'http://localhost:8080' })).toString('base64url')
  return JSON.stringify({
    id,
    rawId: id,
    type: 'public-key',
    response: { clientDataJSON: clientData, authenticatorData: 'AAAA', signature: 'AAAA' },
    clientExtensionResults: {},
  })
}

t.test('passkey-login: anything but a valid answer to a live challenge signs nobody in', async (t) => {
  const { b, csrf } = await loginPage(front)
  const challenge = async (): Promise<string> =>
    ((await (await post(front, 'passkey-options', { purpose: 'sign-in', csrf }, cookieOf(b))).json()) as { challenge: string }).challenge
  const live = await challenge()
  const bad: Array<[string, string]> = [
    ['nothing', ''],
    ['not JSON', '{nope'],
    ['a JSON string', '"public-key"'],
    [
      'a registration response',
      JSON.stringify({ id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'AAAA', attestationObject: 'AAAA' } }),
    ],
    ['id and rawId differing', JSON.parse(JSON.stringify(assertion(live))).replace('"rawId":"AAAA"', '"rawId":"BBBB"')],
    ['a field that is not base64url', assertion(live).replace('"signature":"AAAA"', '"signature":"AA+A"')],
    ['a huge field', assertion(live).replace('"signature":"AAAA"', `"signature":"${'A'.repeat(20_000)}"`)],
    ['an unknown challenge', assertion('bm90LWEtY2hhbGxlbmdl')],
    ['an unknown credential for a live challenge', assertion(live)],
    ['the same live challenge again', assertion(live)],
  ]
  for (const [what, credential] of bad) {
    const res = await post(front, 'passkey-login', { csrf, next: 'account', credential }, cookieOf(b))
    t.equal(res.status, 400, `${what}: 400`)
    t.equal(res.headers.get('set-cookie')?.includes('bw_session=') ?? false, false, `${what}: no session`)
    t.match(await res.text(), PASSKEY_FAILED.split('.')[0] ?? '', `${what}: the login page says so`)
  }
  t.equal((await post(front, 'passkey-login', { next: 'account', credential: assertion(await challenge()) }, cookieOf(b))).status, 403, 'no CSRF token: 403')
})

t.test('the account page: passkeys are added and removed only by their owner, with the session token', async (t) => {
  const { b, html } = await loginPage(front)
  const signedIn = await b.submit(formWith(html, `${front.url}/account`, 'password'), { username: 'alice', password: ALICE_PASSWORD })
  t.equal(signedIn.status, 303)
  const page = await (await b.get(`${front.url}/account`)).text()
  t.match(page, '<h2>Passkeys</h2>')
  t.match(page, 'You have no passkeys yet.')
  const add = parseForms(page, `${front.url}/account`).find((f) => f.fields.action === 'add')
  const token = add?.fields.csrf ?? ''
  t.ok(token, 'the add form carries the session CSRF token')

  const now = Math.floor(front.clock.now() / 1000)
  const record = {
    username: 'bob',
    name: "Bob's key",
    publicKey: 'AA',
    counter: 0,
    transports: [],
    deviceType: 'singleDevice' as const,
    backedUp: false,
    createdAt: now,
    lastUsedAt: null,
  }
  await front.store.passkeys.add({ ...record, credentialId: 'bobs', sub: 'bob' })
  await front.store.passkeys.add({ ...record, credentialId: 'alices', sub: 'alice', username: 'alice', name: 'Work <laptop>' })
  // As if she had signed in with that passkey: adding and removing need a recent sign-in with her strongest factor.
  const sid = hashToken(b.cookies.get('bw_session') ?? '')
  const signedInRecord = await front.store.sessions.get(sid)
  if (signedInRecord === null) throw new Error('no session')
  await front.store.sessions.put(sid, { ...signedInRecord, amr: ['hwk', 'user', 'mfa'], acr: 'phr' }, 600)
  const listed = await (await b.get(`${front.url}/account`)).text()
  t.match(listed, '<h3>Work &lt;laptop&gt;</h3>', 'her passkey, its name escaped')
  t.notMatch(listed, "Bob's key", "not bob's")

  t.equal((await post(front, 'passkeys', { action: 'remove', credential_id: 'alices' }, cookieOf(b))).status, 403, 'no CSRF token: 403')
  t.equal(
    (await post(front, 'passkeys', { csrf: token, action: 'remove', credential_id: 'alices' }, cookieOf(b), { origin: 'https://evil.example' })).status,
    403,
    'another site: 403',
  )
  t.equal((await post(front, 'passkeys', { csrf: token, action: 'remove', credential_id: 'bobs' }, cookieOf(b))).status, 400, "bob's passkey: 400")
  t.not(await front.store.passkeys.get('bobs'), null, "bob's is untouched")
  t.equal(
    (await post(front, 'passkeys', { csrf: token, action: 'add', name: 'x', credential: '{}' }, cookieOf(b))).headers.get('location'),
    'account?passkey=failed',
    'a non-credential is not added',
  )
  t.same(
    (await front.store.passkeys.list('alice')).map((p) => p.credentialId),
    ['alices'],
    'nothing was added',
  )
  const renamed = await post(front, 'passkeys', { csrf: token, action: 'rename', credential_id: 'alices', name: '  Home\u0007 <desk>  ' }, cookieOf(b))
  t.equal(renamed.headers.get('location'), 'account?passkey=renamed', 'renamed')
  t.equal((await front.store.passkeys.get('alices'))?.name, 'Home <desk>', 'trimmed, control characters dropped')
  t.match(await (await b.get(`${front.url}/account?passkey=renamed`)).text(), '<h3>Home &lt;desk&gt;</h3>')
  t.equal(
    (await post(front, 'passkeys', { csrf: token, action: 'rename', credential_id: 'alices', name: ' \u0007 ' }, cookieOf(b))).status,
    400,
    'an empty name: 400',
  )
  t.equal(
    (await post(front, 'passkeys', { csrf: token, action: 'rename', credential_id: 'bobs', name: 'Mine' }, cookieOf(b))).status,
    400,
    "renaming bob's: 400",
  )
  t.equal((await front.store.passkeys.get('bobs'))?.name, "Bob's key", "bob's keeps its name")
  t.equal(
    (await post(front, 'passkeys', { action: 'rename', credential_id: 'alices', name: 'x' }, cookieOf(b))).status,
    403,
    'rename without the CSRF token: 403',
  )
  const removed = await post(front, 'passkeys', { csrf: token, action: 'remove', credential_id: 'alices' }, cookieOf(b))
  t.equal(removed.status, 303)
  t.equal(removed.headers.get('location'), 'account?passkey=removed')
  t.equal(await front.store.passkeys.get('alices'), null, 'hers is removed')
  t.match(await (await b.get(`${front.url}/account?passkey=removed`)).text(), 'The passkey was removed.')
})
