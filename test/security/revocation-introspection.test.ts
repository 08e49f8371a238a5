/**
 * Attacks on /revoke (RFC 7009) and /introspect (RFC 7662) of the real
 * binary: both need client authentication (401 invalid_client with a Basic
 * challenge otherwise); revocation answers 200 whatever the token (no
 * oracle) but only ever revokes the caller's own tokens; introspection is
 * only for clients allowed it, and says exactly {"active":false} for anything
 * that is not a live token.
 */
import t, { type Test } from 'tap'
import { Browser, authorizeAsPerson } from '../helpers/browser.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'
import { generateKeyPairSync, sign as cryptoSign } from 'node:crypto'
import {
  AT_HEADER,
  accessClaims,
  b64url,
  basic,
  eventuallyStatus,
  pkce,
  postForm,
  serviceToken,
  signEs256,
  startTarget,
  type Target,
} from '../helpers/attack.js'

let target: Target
/** One logged-in browser for the file (consent is remembered after the first allow). */
const browser = new Browser()

t.before(async () => {
  target = await startTarget()
})
t.teardown(() => target.close())

const svc = (): Record<string, string> => ({ authorization: basic('service', target.secret) })
const web = (): Record<string, string> => ({ authorization: basic('web', target.secret) })
const revoke = (body: Record<string, string> | Array<[string, string]>, headers: Record<string, string> = {}): Promise<Response> =>
  postForm(`${target.url}/revoke`, body, headers)
const introspect = (body: Record<string, string> | Array<[string, string]>, headers: Record<string, string> = {}): Promise<Response> =>
  postForm(`${target.url}/introspect`, body, headers)
const gateway = async (token: string): Promise<number> => (await fetch(`${target.url}/orders/1`, { headers: { authorization: `Bearer ${token}` } })).status

async function assertInvalidClient(t: Test, res: Response, label: string): Promise<void> {
  const body = (await res.json()) as Record<string, unknown>
  t.equal(res.status, 401, `${label}: 401`)
  t.equal(body.error, 'invalid_client', `${label}: invalid_client`)
  t.match(res.headers.get('www-authenticate'), /^Basic realm=/, `${label}: Basic challenge`)
  t.notOk('active' in body, `${label}: no introspection answer`)
}

async function assertInactive(t: Test, res: Response, label: string): Promise<void> {
  t.equal(res.status, 200, `${label}: 200`)
  t.equal(await res.text(), '{"active":false}', `${label}: exactly {"active":false}`)
}

/** Tokens for alice through the web client (with a refresh token). */
async function userTokens(): Promise<{ access_token: string; refresh_token: string; id_token?: string }> {
  const { verifier, challenge } = pkce()
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: 'http://127.0.0.1:5555/callback',
    scope: 'openid orders:read',
    state: 's',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })
  const cb = await authorizeAsPerson(browser, `${target.url}/authorize?${q}`, { username: 'alice', password: DEMO_PASSWORD })
  const res = await postForm(
    `${target.url}/token`,
    { grant_type: 'authorization_code', code: cb.searchParams.get('code') ?? '', redirect_uri: 'http://127.0.0.1:5555/callback', code_verifier: verifier },
    web(),
  )
  if (res.status !== 200) throw new Error(`token: ${res.status}`)
  return (await res.json()) as { access_token: string; refresh_token: string; id_token?: string }
}
t.test('/revoke requires client authentication and changes nothing without it', async (t) => {
  const token = await serviceToken(target)
  await assertInvalidClient(t, await revoke({ token }), 'no authentication')
  await assertInvalidClient(t, await revoke({ token }, { authorization: basic('service', 'wrong') }), 'wrong secret')
  await assertInvalidClient(t, await revoke({ token, client_id: 'service' }), 'client_id without a secret')
  await assertInvalidClient(t, await revoke({ token }, { authorization: `Bearer ${token}` }), 'the token itself as the credential')
  t.equal(await gateway(token), 200, 'the token still works')
})

t.test("revoking another client's token answers 200 and revokes nothing", async (t) => {
  const token = await serviceToken(target)
  const res = await revoke({ token }, web())
  t.equal(res.status, 200, "web revokes service's token: 200 (no oracle)")
  const user = await userTokens()
  t.equal((await revoke({ token: user.refresh_token, token_type_hint: 'refresh_token' }, svc())).status, 200, "service revokes web's refresh token: 200")
  t.equal((await revoke({ token: user.access_token }, svc())).status, 200, "service revokes web's access token: 200")
  // A revocation sent after these is refused by the gateway once it has landed; the ignored ones, had they
  // revoked anything, landed before it (one process, one store, in order). No time is waited for nothing to happen.
  const marker = await serviceToken(target)
  t.equal((await revoke({ token: marker }, svc())).status, 200)
  t.equal(await eventuallyStatus(() => gateway(marker), 401), 401, 'a revocation sent after them is in force')
  t.equal(await gateway(token), 200, "service's token still valid")
  t.equal(await gateway(user.access_token), 200, "web's access token still valid")
  const refreshed = await postForm(`${target.url}/token`, { grant_type: 'refresh_token', refresh_token: user.refresh_token }, web())
  t.equal(refreshed.status, 200, "web's refresh token still works")
  const active = (await (await introspect({ token }, svc())).json()) as { active: boolean }
  t.equal(active.active, true, 'introspection still says active')
})

t.test('/revoke of unknown or malformed tokens answers 200; a missing token is invalid_request', async (t) => {
  for (const token of ['garbage', 'a.b.c', signEs256(target.key, AT_HEADER, accessClaims(target, { client_id: 'service' })), 'x'.repeat(4000)]) {
    const res = await revoke({ token }, svc())
    t.equal(res.status, 200, `token ${token.slice(0, 12)}…: 200`)
    await res.arrayBuffer()
  }
  const wrongHint = await revoke({ token: 'garbage', token_type_hint: 'something_else' }, svc())
  t.equal(wrongHint.status, 200, 'unknown hint: still 200')
  const missing = await revoke({ token_type_hint: 'access_token' }, svc())
  t.equal(missing.status, 400)
  t.match(await missing.json(), { error: 'invalid_request' })
  const repeated = await revoke(
    [
      ['token', 'a'],
      ['token', 'b'],
    ],
    svc(),
  )
  t.equal(repeated.status, 400, 'repeated token parameter: 400')
  t.match(await repeated.json(), { error: 'invalid_request' })
})

t.test('a misleading token_type_hint does not stop a revocation (RFC 7009 2.1)', async (t) => {
  const token = await serviceToken(target)
  t.equal((await revoke({ token, token_type_hint: 'refresh_token' }, svc())).status, 200)
  t.equal(await eventuallyStatus(() => gateway(token), 401), 401, 'the access token is revoked despite the refresh_token hint')
})

t.test('/introspect: only authenticated clients with introspection rights', async (t) => {
  const token = await serviceToken(target)
  await assertInvalidClient(t, await introspect({ token }), 'no authentication')
  await assertInvalidClient(t, await introspect({ token }, web()), 'web (no introspect right)')
  await assertInvalidClient(t, await introspect({ token, client_id: 'cli' }), 'public client')
  await assertInvalidClient(t, await introspect({ token }, { authorization: basic('service', 'wrong') }), 'wrong secret')
  await assertInvalidClient(t, await introspect({ token }, { authorization: `Bearer ${token}` }), 'Bearer credential')
  const get = await fetch(`${target.url}/introspect?token=${token}`, { headers: svc() })
  t.equal(get.status, 405, 'GET /introspect: 405')
  t.notMatch(await get.text(), /"active":true/)
})

t.test('/introspect says exactly {"active":false} for anything that is not a live access or refresh token', async (t) => {
  const attacker = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
  const input = `${b64url(AT_HEADER)}.${b64url(accessClaims(target))}`
  const foreign = `${input}.${cryptoSign('sha256', Buffer.from(input), { key: attacker, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`
  const now = Math.floor(Date.now() / 1000)
  const cases: Array<[string, string]> = [
    ['garbage', 'garbage'],
    ['three dots', '...'],
    ['alg none', `${b64url({ alg: 'none', typ: 'at+jwt' })}.${b64url(accessClaims(target))}.`],
    ['signed by a foreign key', foreign],
    ['our key, expired', signEs256(target.key, AT_HEADER, accessClaims(target, { iat: now - 3600, exp: now - 600 }))],
    ['our key, wrong iss', signEs256(target.key, AT_HEADER, accessClaims(target, { iss: 'https://evil.example' }))],
    ['our key, typ JWT', signEs256(target.key, { ...AT_HEADER, typ: 'JWT' }, accessClaims(target))],
    ['very long', 'y'.repeat(20000)],
  ]
  for (const [label, token] of cases) await assertInactive(t, await introspect({ token }, svc()), label)

  const user = await userTokens()
  if (user.id_token) await assertInactive(t, await introspect({ token: user.id_token }, svc()), 'an ID token')

  const revoked = await serviceToken(target)
  await revoke({ token: revoked }, svc())
  await assertInactive(t, await introspect({ token: revoked }, svc()), 'a revoked access token')
})

t.test('refresh token introspection after rotation: the replaced one is inactive', async (t) => {
  const user = await userTokens()
  const before = (await (await introspect({ token: user.refresh_token, token_type_hint: 'refresh_token' }, svc())).json()) as { active: boolean }
  t.equal(before.active, true, 'the refresh token is active before rotation')
  const rotated = (await (await postForm(`${target.url}/token`, { grant_type: 'refresh_token', refresh_token: user.refresh_token }, web())).json()) as {
    refresh_token: string
  }
  t.ok(rotated.refresh_token, 'rotated')
  await assertInactive(t, await introspect({ token: user.refresh_token, token_type_hint: 'refresh_token' }, svc()), 'the replaced refresh token')
  await assertInactive(t, await introspect({ token: user.refresh_token }, svc()), 'the replaced refresh token, no hint')
  const current = (await (await introspect({ token: rotated.refresh_token }, svc())).json()) as { active: boolean }
  t.equal(current.active, true, 'the new refresh token is active')
})
