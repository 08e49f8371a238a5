import t from 'tap'
import { PASSKEY_SECOND_FACTOR_FAILED } from '../../src/as/interaction/passkey-second-factor.js'
import { hashToken } from '../../src/store/hash.js'
import type { PasskeyRecord } from '../../src/store/types.js'
import { ALICE_PASSWORD, authorizeUrl, authParams, Browser, formWith, frontYaml, parseForms, startFront, type Front } from '../helpers/as-front.js'

/**
 * A passkey as the second factor after a password, over HTTP as a stranger
 * reaches it (the ceremony itself runs in Chromium,
 * test/browser/passkey-second-factor.test.ts): when an authorization asks for
 * more than a password, alice's right password leads to the passkey page, the
 * options name only her credentials, and an assertion naming bob's passkey,
 * an unknown challenge or a used one finishes nothing. And the options
 * endpoint hands out at most `passkey_options_per_address` challenges per
 * address (an IPv6 client by its /64), so a flood cannot grow the store.
 */

const WEBAUTHN = '  webauthn: { rp_id: localhost, origins: ["http://localhost:8080"] }\n'
const yaml = (await frontYaml({ asExtra: WEBAUTHN, topExtra: 'gateway: { trusted_proxies: [127.0.0.1] }' })).replace(
  'window: 5m }',
  'window: 5m, passkey_options_per_address: 5 }',
)
const front: Front = await startFront(yaml)
t.teardown(() => front.close())
const policy: Front = await startFront(await frontYaml({ asExtra: `${WEBAUTHN}  mfa: { required: true, methods: [passkey] }\n` }))
t.teardown(() => policy.close())

function passkeyOf(sub: string, credentialId: string): PasskeyRecord {
  return {
    credentialId,
    sub,
    username: sub,
    name: `${sub}'s key`,
    publicKey: 'AA',
    counter: 7,
    transports: ['internal'],
    deviceType: 'singleDevice',
    backedUp: false,
    createdAt: Math.floor(front.clock.now() / 1000),
    lastUsedAt: null,
  }
}
for (const f of [front, policy]) {
  await f.store.passkeys.add(passkeyOf('alice', 'alice-key'))
  await f.store.passkeys.add(passkeyOf('bob', 'bob-key'))
}

/** A well-formed assertion around `challenge` for credential `id` (its signature is nonsense, so it is refused before or at the signature). */
function assertion(challenge: string, id: string): string {
  const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin: 'http://localhost:8080' })).toString('base64url')
  return JSON.stringify({ id, rawId: id, type: 'public-key', response: { clientDataJSON: clientData, authenticatorData: 'AAAA', signature: 'AAAA' } })
}

/** Alice's password at the login page of an authorization request; the browser and the answer to the login POST. */
async function password(f: Front, extra: Record<string, string> = {}): Promise<{ b: Browser; res: Response }> {
  const b = new Browser()
  const url = authorizeUrl(f, authParams(extra))
  const form = formWith(await (await b.get(url)).text(), url, 'password')
  return { b, res: await b.submit(form, { username: 'alice', password: ALICE_PASSWORD }) }
}

async function options(f: Front, b: Browser, fields: Record<string, string>, from?: string): Promise<Response> {
  return fetch(`${f.url}/passkey-options`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      cookie: [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      ...(from === undefined ? {} : { 'x-forwarded-for': from }),
    },
    body: new URLSearchParams(fields),
  })
}

/** The passkey page of a pending sign-in: its form and the options its script would ask for. */
async function passkeyPage(f: Front, b: Browser): Promise<{ html: string; csrf: string; csp: string }> {
  const res = await b.get(`${f.url}/second-factor`)
  const html = await res.text()
  const form = parseForms(html, `${f.url}/second-factor`).find((x) => 'credential' in x.fields)
  return { html, csrf: form?.fields.csrf ?? '', csp: res.headers.get('content-security-policy') ?? '' }
}

t.test('acr_values=mfa: the password, then the passkey page; its options name only her passkeys', async (t) => {
  const { b, res } = await password(front, { acr_values: 'mfa' })
  t.equal(res.status, 303)
  t.equal(res.headers.get('location'), 'second-factor', 'the password alone finishes nothing')
  const page = await passkeyPage(front, b)
  t.match(page.html, '<h1>Use your passkey</h1>')
  t.match(page.html, 'data-passkey="second-factor"')
  t.notMatch(page.html, 'name="code"', 'no authenticator-app form: she has none')
  t.match(page.csp, `script-src ${front.issuer}/assets/passkeys.js; connect-src ${front.issuer}/passkey-options`)
  t.ok(page.csrf, 'the form carries the pending sign-in’s CSRF token')

  t.equal((await options(front, b, { purpose: 'second-factor', csrf: `${page.csrf}x` })).status, 403, 'a wrong token: 403')
  t.equal((await options(front, new Browser(), { purpose: 'second-factor', csrf: page.csrf })).status, 403, 'no pending sign-in: 403')
  const ok = await options(front, b, { purpose: 'second-factor', csrf: page.csrf })
  t.equal(ok.status, 200)
  const o = (await ok.json()) as { challenge: string; userVerification: string; allowCredentials: Array<{ id: string }> }
  t.same(
    o.allowCredentials.map((c) => c.id),
    ['alice-key'],
    "only alice's credentials, never bob's",
  )
  t.equal(o.userVerification, 'preferred', 'the password is the other factor')
  t.same(
    await front.store.passkeys.takeChallenge(hashToken(o.challenge)),
    { purpose: 'second-factor', sub: 'alice', expiresAt: Math.floor(front.clock.now() / 1000) + 300 },
    'kept for 5 minutes, bound to her',
  )
})

t.test("bob's passkey, an unknown challenge, a used one: nothing is finished", async (t) => {
  const { b } = await password(front, { acr_values: 'mfa' })
  const { csrf } = await passkeyPage(front, b)
  const challenge = async (): Promise<string> =>
    ((await (await options(front, b, { purpose: 'second-factor', csrf })).json()) as { challenge: string }).challenge
  const form = parseForms((await passkeyPage(front, b)).html, `${front.url}/second-factor`).find((x) => 'credential' in x.fields)
  if (form === undefined) throw new Error('no passkey form')
  const live = await challenge()
  const cases: Array<[string, string]> = [
    ["bob's passkey over her challenge", assertion(live, 'bob-key')],
    ['the same challenge again, with her passkey', assertion(live, 'alice-key')],
    ['a challenge never handed out', assertion('bm90LWEtY2hhbGxlbmdl', 'alice-key')],
  ]
  for (const [what, credential] of cases) {
    const res = await b.submit(form, { credential })
    t.equal(res.status, 400, `${what}: 400`)
    t.match(await res.text(), PASSKEY_SECOND_FACTOR_FAILED, `${what}: the page says so`)
    t.equal(res.headers.get('set-cookie'), null, `${what}: no session`)
  }
  t.equal((await front.store.passkeys.get('bob-key'))?.counter, 7, "bob's passkey is untouched")
  t.equal((await front.store.passkeys.get('bob-key'))?.lastUsedAt, null)
  const still = await b.get(`${front.url}/account`)
  t.match(await still.text(), '<h1>Sign in</h1>', 'the browser is signed in nowhere')

  // A sign-in challenge (a passkey alone) does not answer a second factor either.
  const pre = new Browser()
  const login = await pre.get(`${front.url}/account`)
  const loginCsrf = formWith(await login.text(), `${front.url}/account`, 'password').fields.csrf ?? ''
  const signIn = ((await (await options(front, pre, { purpose: 'sign-in', csrf: loginCsrf })).json()) as { challenge: string }).challenge
  const crossed = await b.submit(form, { credential: assertion(signIn, 'alice-key') })
  t.equal(crossed.status, 400, 'a challenge issued for another ceremony: 400')
})

t.test('no second factor asked for: the password alone goes on', async (t) => {
  const { res } = await password(front)
  t.equal(res.status, 303)
  t.match(res.headers.get('location') ?? '', /^authorize\?/, 'on to consent, no passkey page')
})

t.test('mfa.required with methods [passkey]: the passkey page; a stranger without a pending sign-in gets none', async (t) => {
  const { b, res } = await password(policy)
  t.equal(res.headers.get('location'), 'second-factor')
  t.match((await passkeyPage(policy, b)).html, '<h1>Use your passkey</h1>')
  const stranger = await new Browser().get(`${policy.url}/second-factor`)
  t.equal(stranger.status, 400)
  t.match(await stranger.text(), 'Sign in again')
})

t.test('passkey-options: at most passkey_options_per_address challenges per address; an IPv6 client counts by its /64', async (t) => {
  const b = new Browser()
  const login = await b.get(`${front.url}/account`)
  const csrf = formWith(await login.text(), `${front.url}/account`, 'password').fields.csrf ?? ''
  const before = front.store.size
  const statuses: number[] = []
  let refused: Response | null = null
  for (let i = 1; i <= 40; i++) {
    const res = await options(front, b, { purpose: 'sign-in', csrf }, `2001:db8:77:1::${i.toString(16)}`)
    statuses.push(res.status)
    if (res.status === 429) refused ??= res
    else await res.arrayBuffer()
  }
  t.same(statuses.slice(0, 5), [200, 200, 200, 200, 200], 'five challenges for the network')
  t.ok(
    statuses.slice(5).every((s) => s === 429),
    'then 429 for every address of that /64',
  )
  t.equal(refused?.headers.get('retry-after'), '300', 'Retry-After: the rest of the 5-minute window')
  t.match(await refused?.json(), { error: 'too_many_requests' })
  t.equal(front.store.size - before, 5 + 1, 'the store grew by five challenges and one counter, not forty')
  t.equal((await options(front, b, { purpose: 'sign-in', csrf }, '2001:db8:77:2::1')).status, 200, 'the next /64 is not limited')
  front.clock.advance(300_000)
  t.equal((await options(front, b, { purpose: 'sign-in', csrf }, '2001:db8:77:1::1')).status, 200, 'a new window, new challenges')
})
