/**
 * `acr_values` a person cannot meet with the factors they have (issue #38
 * item 8): the login page used to come back with "Sign in with a passkey" for
 * someone who has none, and their password led to it again (400) with no way
 * forward. Now they are offered the set-up `require_mfa` offers (where
 * `mfa.methods` allow it), which leads back to the authorization, or the
 * client is told `access_denied` with a description when nothing offered here
 * could meet it. A browser test follows the whole way
 * (test/browser/acr-enrolment.test.ts).
 */
import t from 'tap'
import { hashToken } from '../../src/store/hash.js'
import type { Front } from '../helpers/as-front.js'
import { authorizeUrl, authParams, BOB_PASSWORD, Browser, countCodes, formWith, frontYaml, parseForms, startFront } from '../helpers/as-front.js'

const WEBAUTHN = '  webauthn: { rp_id: localhost, origins: ["http://localhost:8080"] }\n'
const FIRST_CB = 'https://first.example.com/cb'

/** Bob (no second factor) at the login page of an authorization of `first` with `acr`, then his password: the answer to it. */
async function passwordFor(f: Front, acr: string): Promise<{ b: Browser; res: Response }> {
  const b = new Browser()
  const url = authorizeUrl(f, authParams({ client_id: 'first', redirect_uri: FIRST_CB, acr_values: acr }))
  const res = await b.submit(formWith(await (await b.get(url)).text(), url, 'password'), { username: 'bob', password: BOB_PASSWORD })
  return { b, res }
}

t.test('acr_values=mfa, passkeys on: an authenticator-app set-up leading back, not the passkey login again', async (t) => {
  const f = await startFront(await frontYaml({ asExtra: WEBAUTHN }))
  t.teardown(() => f.close())
  const codes = countCodes(f.store)
  const { b, res } = await passwordFor(f, 'mfa')
  t.equal(res.status, 303)
  const to = res.headers.get('location') ?? ''
  t.match(to, /^account\?mfa=setup&request=.*#totp$/, 'to the set-up')
  const page = await (await b.get(new URL(to, `${f.url}/`).toString())).text()
  t.match(page, 'needs a second step after your password. Set up an authenticator app below')
  const start = parseForms(page, `${f.url}/account`).find((x) => x.fields.action === 'start')
  t.match(start?.fields.request ?? '', /acr_values=mfa/, 'the set-up carries the authorization')
  const add = parseForms(page, `${f.url}/account`).find((x) => x.fields.action === 'add')
  t.match(add?.fields.request ?? '', /acr_values=mfa/, 'so does adding a passkey')
  t.equal(codes.count, 0, 'no code for the one-factor sign-in')
})

t.test('acr_values=phr, passkeys on, for a person with no passkey: the passkey set-up', async (t) => {
  const f = await startFront(await frontYaml({ asExtra: WEBAUTHN }))
  t.teardown(() => f.close())
  const { b, res } = await passwordFor(f, 'phr')
  const to = res.headers.get('location') ?? ''
  t.match(to, /^account\?mfa=passkey&request=/)
  const page = await (await b.get(new URL(to, `${f.url}/`).toString())).text()
  t.match(page, 'Add a passkey below to continue.')
  t.notOk(
    parseForms(page, `${f.url}/account`).some((x) => x.fields.action === 'start' && x.fields.request !== undefined),
    'no authenticator app offered for it: it would not meet phr',
  )
})

t.test('acr_values=mfa with mfa.methods [passkey] and passkeys off: access_denied with a description at the redirect_uri', async (t) => {
  const f = await startFront(await frontYaml({ asExtra: '  mfa: { methods: [passkey] }\n' }))
  t.teardown(() => f.close())
  const codes = countCodes(f.store)
  const { res } = await passwordFor(f, 'mfa')
  t.equal(res.status, 303)
  const back = new URL(res.headers.get('location') ?? '')
  t.equal(back.origin + back.pathname, FIRST_CB)
  t.equal(back.searchParams.get('error'), 'access_denied')
  t.match(back.searchParams.get('error_description') ?? '', /acr_values needs a second factor/)
  t.equal(back.searchParams.get('state'), 'st-1 /+?&=%')
  t.equal(codes.count, 0)
})

t.test('acr_values=phr for a person with an authenticator app, mfa.methods [totp]: access_denied, not the passkey login again', async (t) => {
  const f = await startFront(await frontYaml({ asExtra: `${WEBAUTHN}  mfa: { methods: [totp] }\n` }))
  t.teardown(() => f.close())
  const now = Math.floor(f.clock.now() / 1000)
  await f.store.totp.put('user-0002', {
    secret: f.as.totpSecrets.seal('user-0002', 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP'),
    createdAt: now,
    confirmedAt: now,
    recovery: [],
  })
  const b = new Browser()
  // A session with both his factors: still short of phr.
  const sid = 'S'.repeat(43)
  await f.store.sessions.put(
    hashToken(sid),
    { sub: 'user-0002', username: 'bob', authTime: now, amr: ['pwd', 'otp', 'mfa'], acr: 'mfa', csrf: 'c'.repeat(43) },
    600,
  )
  b.cookies.set('bw_session', sid)
  const res = await b.get(authorizeUrl(f, authParams({ client_id: 'first', redirect_uri: FIRST_CB, acr_values: 'phr' })))
  t.equal(res.status, 302)
  const back = new URL(res.headers.get('location') ?? '')
  t.equal(back.searchParams.get('error'), 'access_denied')
  t.match(back.searchParams.get('error_description') ?? '', /acr_values needs a passkey/)
})
