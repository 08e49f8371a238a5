/**
 * Attacks on POST /token of the real binary (RFC 6749 2.3, 3.2, 4.1.3, 5.2,
 * 6; RFC 7636 4.6; RFC 9700 2.1.1, 2.2.2, 4.14; the token-endpoint
 * validation sequence and error table).
 *
 * Every refusal has the exact status and error code, carries
 * Cache-Control: no-store and Pragma: no-cache, a 401 carries a Basic
 * challenge, and a failing check leaves the code or refresh family usable by
 * its rightful owner.
 */
import t, { type Test } from 'tap'
import { Browser, authorizeAsPerson } from '../helpers/browser.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'
import { hashSecret } from '../../src/crypto/secret.js'
import { basic, demoSecretHash, eventuallyStatus, pkce, postForm, rawHttp, startTarget, type Target } from '../helpers/attack.js'

const REDIRECT = 'http://127.0.0.1:5555/callback'
const ODD_ID = 'odd:client+id%'
const ODD_SECRET = 'p@ss:w%rd+&é ~'

let target: Target
/** One logged-in browser for the file (consent is remembered after the first allow). */
const browser = new Browser()

t.before(async () => {
  const secretHash = await demoSecretHash()
  const oddHash = await hashSecret(ODD_SECRET)
  target = await startTarget({
    rateLimit: '{ login_max_failures: 50, client_auth_max_failures: 1000, window: 15m }',
    clients: `
    - client_id: web2
      type: confidential
      secret_hash: "${secretHash}"
      redirect_uris: [${REDIRECT}]
      grant_types: [authorization_code, refresh_token]
      scopes: [openid, orders:read, orders:write]
    - client_id: "${ODD_ID}"
      type: confidential
      secret_hash: "${oddHash}"
      grant_types: [client_credentials]
      scopes: [orders:read]
`,
  })
})
t.teardown(() => target.close())

const tokenUrl = (): string => `${target.url}/token`
const webAuth = (): string => basic('web', target.secret)

/** A code for `client` (web, web2 or cli) with its PKCE verifier. */
async function getCode(client = 'web', scope = 'orders:read', sendRedirect = true): Promise<{ code: string; verifier: string; redirect: string }> {
  const { verifier, challenge } = pkce()
  const redirect = client === 'cli' ? 'http://127.0.0.1:49152/callback' : REDIRECT
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: client,
    redirect_uri: redirect,
    scope,
    state: 's',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })
  if (!sendRedirect) q.delete('redirect_uri')
  const cb = await authorizeAsPerson(browser, `${target.url}/authorize?${q}`, { username: 'alice', password: DEMO_PASSWORD })
  const code = cb.searchParams.get('code')
  if (!code) throw new Error(`no code: ${cb}`)
  return { code, verifier, redirect }
}

interface Tokens {
  access_token: string
  refresh_token?: string
  scope?: string
}

/** Every answer of the token endpoint must not be cached (RFC 6749 5.1, 5.2). */
function assertNoStore(t: Test, res: Response, label: string): void {
  t.equal(res.headers.get('cache-control'), 'no-store', `${label}: Cache-Control: no-store`)
  t.equal(res.headers.get('pragma'), 'no-cache', `${label}: Pragma: no-cache`)
}

/** Every invalid_grant description seen: all causes must read the same (docs/architecture.md: told apart only in server logs). */
const grantDescriptions = new Set<unknown>()

async function assertError(t: Test, res: Response, status: number, error: string, label: string): Promise<void> {
  const body = (await res.json()) as Record<string, unknown>
  if (body.error === 'invalid_grant') grantDescriptions.add(body.error_description)
  t.equal(res.status, status, `${label}: ${status}`)
  t.equal(body.error, error, `${label}: ${error}`)
  t.notOk('access_token' in body, `${label}: no token`)
  assertNoStore(t, res, label)
  if (status === 401) t.match(res.headers.get('www-authenticate'), /^Basic realm="[^"]*"/, `${label}: Basic challenge`)
}

async function exchange(
  code: string,
  verifier: string | undefined,
  o: { auth?: string; redirect?: string; extra?: Record<string, string> } = {},
): Promise<Response> {
  const body: Record<string, string> = { grant_type: 'authorization_code', code, redirect_uri: o.redirect ?? REDIRECT, ...o.extra }
  if (verifier !== undefined) body.code_verifier = verifier
  return postForm(tokenUrl(), body, o.auth === '' ? {} : { authorization: o.auth ?? webAuth() })
}

async function tokensOf(t: Test, res: Response, label: string): Promise<Tokens> {
  t.equal(res.status, 200, `${label}: 200`)
  assertNoStore(t, res, label)
  return (await res.json()) as Tokens
}

const gatewayStatus = async (token: string): Promise<number> =>
  (await fetch(`${target.url}/orders/1`, { headers: { authorization: `Bearer ${token}` } })).status

t.test('PKCE: no downgrade to plain, malformed verifiers refused, and failures leave the code redeemable', async (t) => {
  const { code, verifier } = await getCode()
  const { challenge } = pkce()
  const wrong: Array<[string, string | undefined]> = [
    ['verifier missing', undefined],
    ['the challenge sent as a plain verifier', challenge],
    ['another valid verifier', pkce().verifier],
    ['42 characters', verifier.slice(0, 42)],
    ['129 characters', verifier + 'a'.repeat(86)],
    ['with a trailing newline', `${verifier}\n`],
    ['with + and /', `${verifier.slice(0, 41)}+/`],
    ['with a space', `${verifier.slice(0, 20)} ${verifier.slice(21)}`],
    ['non-ASCII', `${verifier.slice(0, 42)}é`],
    ['upper-cased', verifier.toUpperCase() === verifier ? `${verifier}A` : verifier.toUpperCase()],
  ]
  for (const [label, v] of wrong) await assertError(t, await exchange(code, v), 400, 'invalid_grant', label)
  const repeated = await postForm(
    tokenUrl(),
    [
      ['grant_type', 'authorization_code'],
      ['code', code],
      ['redirect_uri', REDIRECT],
      ['code_verifier', 'x'.repeat(43)],
      ['code_verifier', verifier],
    ],
    { authorization: webAuth() },
  )
  await assertError(t, repeated, 400, 'invalid_request', 'repeated code_verifier')
  await tokensOf(t, await exchange(code, verifier), 'the rightful exchange after all the failures')
})

t.test('redirect_uri at the token endpoint must be identical to the authorization request', async (t) => {
  const { code, verifier } = await getCode()
  for (const uri of [`${REDIRECT}/`, 'http://127.0.0.1:5556/callback', 'HTTP://127.0.0.1:5555/callback', 'https://evil.example/cb']) {
    await assertError(t, await exchange(code, verifier, { redirect: uri }), 400, 'invalid_grant', `redirect_uri ${uri}`)
  }
  const missing = await postForm(tokenUrl(), { grant_type: 'authorization_code', code, code_verifier: verifier }, { authorization: webAuth() })
  await assertError(t, missing, 400, 'invalid_grant', 'redirect_uri omitted although it was sent at /authorize')
  await tokensOf(t, await exchange(code, verifier), 'then the rightful exchange')

  // redirect_uri omitted at /authorize (one registered URI): the token request may omit it or name that one, nothing else.
  const implicit = await getCode('web', 'orders:read', false)
  await assertError(
    t,
    await exchange(implicit.code, implicit.verifier, { redirect: 'http://127.0.0.1:5556/callback' }),
    400,
    'invalid_grant',
    'another redirect_uri when none was sent at /authorize',
  )
  await tokensOf(t, await exchange(implicit.code, implicit.verifier), 'the registered one')
})

t.test('a code issued to one client is refused to another, and stays redeemable by its owner', async (t) => {
  const { code, verifier } = await getCode('web')
  await assertError(t, await exchange(code, verifier, { auth: basic('web2', target.secret) }), 400, 'invalid_grant', "web2 (confidential) redeems web's code")
  await assertError(t, await exchange(code, verifier, { auth: '', extra: { client_id: 'cli' } }), 400, 'invalid_grant', "cli (public) redeems web's code")
  await tokensOf(t, await exchange(code, verifier), 'web redeems its own code')
})

t.test('a replayed code is refused and revokes what the first exchange issued', async (t) => {
  const { code, verifier } = await getCode('web', 'orders:read')
  const first = await tokensOf(t, await exchange(code, verifier), 'first exchange')
  t.equal(await gatewayStatus(first.access_token), 200, 'the access token works before the replay')
  await assertError(t, await exchange(code, verifier), 400, 'invalid_grant', 'replay')
  t.equal(await eventuallyStatus(() => gatewayStatus(first.access_token), 401), 401, 'the access token from the first exchange is refused after the replay')
  const refresh = await postForm(tokenUrl(), { grant_type: 'refresh_token', refresh_token: first.refresh_token ?? '' }, { authorization: webAuth() })
  await assertError(t, refresh, 400, 'invalid_grant', 'its refresh token is dead too')
})

t.test('two concurrent exchanges of one code: exactly one wins', async (t) => {
  const { code, verifier } = await getCode()
  const results = await Promise.all(Array.from({ length: 8 }, () => exchange(code, verifier)))
  const statuses = results.map((r) => r.status)
  await Promise.all(results.map((r) => r.arrayBuffer()))
  t.equal(statuses.filter((s) => s === 200).length, 1, `one 200 among ${statuses.join(',')}`)
  t.equal(statuses.filter((s) => s === 400).length, 7, 'the rest invalid_grant')
})

t.test('client authentication confusion is refused (RFC 6749 2.3, 5.2)', async (t) => {
  const cc = { grant_type: 'client_credentials', scope: 'orders:read' }
  const s = target.secret
  await assertError(
    t,
    await postForm(tokenUrl(), { ...cc, client_id: 'service', client_secret: s }, { authorization: basic('service', s) }),
    400,
    'invalid_request',
    'Basic and client_secret_post together',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), { ...cc, client_id: 'web' }, { authorization: basic('service', s) }),
    400,
    'invalid_request',
    'Basic for service, body client_id=web',
  )
  await assertError(t, await postForm(tokenUrl(), cc, { authorization: basic('service', 'wrong-secret') }), 401, 'invalid_client', 'wrong secret')
  await assertError(t, await postForm(tokenUrl(), cc, { authorization: basic('service', '') }), 401, 'invalid_client', 'empty secret')
  await assertError(t, await postForm(tokenUrl(), cc, { authorization: basic('nosuch', s) }), 401, 'invalid_client', 'unknown client')
  await assertError(t, await postForm(tokenUrl(), cc, { authorization: 'Basic !!!not-base64!!!' }), 401, 'invalid_client', 'malformed base64')
  await assertError(
    t,
    await postForm(tokenUrl(), cc, { authorization: `Basic ${Buffer.from('service').toString('base64')}` }),
    401,
    'invalid_client',
    'Basic without a colon',
  )
  await assertError(t, await postForm(tokenUrl(), cc, { authorization: 'Basic' }), 401, 'invalid_client', 'Basic with no credentials')
  await assertError(
    t,
    await postForm(tokenUrl(), cc, { authorization: `Basic ${Buffer.from(`:${s}`).toString('base64')}` }),
    401,
    'invalid_client',
    'empty client id',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), cc, { authorization: `Basic ${Buffer.from(`service:${s}%ZZ`).toString('base64')}` }),
    401,
    'invalid_client',
    'bad percent-encoding',
  )
  await assertError(t, await postForm(tokenUrl(), cc, { authorization: `Bearer ${s}` }), 401, 'invalid_client', 'Bearer scheme at /token')
  await assertError(t, await postForm(tokenUrl(), cc), 401, 'invalid_client', 'no authentication at all')
  await assertError(t, await postForm(tokenUrl(), { ...cc, client_id: 'service' }), 401, 'invalid_client', 'confidential client naming itself without a secret')
  await assertError(
    t,
    await postForm(tokenUrl(), { ...cc, client_id: 'service', client_secret: s }),
    401,
    'invalid_client',
    'client_secret_post for a client registered for Basic',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'authorization_code', code: 'x', client_id: 'cli', client_secret: 'anything' }),
    401,
    'invalid_client',
    'public client sending a secret',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'authorization_code', code: 'x' }, { authorization: basic('cli', '') }),
    401,
    'invalid_client',
    'public client with Basic and an empty secret',
  )
  const twoAuth = await rawHttp(
    target.url,
    `POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${basic('service', 'wrong')}\r\nAuthorization: ${basic('service', s)}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 29\r\nConnection: close\r\n\r\ngrant_type=client_credentials`,
  )
  t.not(twoAuth.status, 200, `two Authorization headers are not a way in (${twoAuth.status})`)
})

t.test('RFC 6749 2.3.1: id and secret are form-urlencoded inside Basic', async (t) => {
  const cc = { grant_type: 'client_credentials', scope: 'orders:read' }
  const ok = await postForm(tokenUrl(), cc, { authorization: basic(ODD_ID, ODD_SECRET) })
  await tokensOf(t, ok, 'encoded id and secret with `:`, `%`, `+`, `&`, space and non-ASCII')
  const rawCreds = `Basic ${Buffer.from(`${ODD_ID}:${ODD_SECRET}`).toString('base64')}`
  await assertError(t, await postForm(tokenUrl(), cc, { authorization: rawCreds }), 401, 'invalid_client', 'the same credentials not form-encoded')
})

t.test('grant types: password and unknown grants are refused; a client only uses its own grants', async (t) => {
  const auth = { authorization: basic('service', target.secret) }
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'password', username: 'alice', password: DEMO_PASSWORD, scope: 'orders:read' }, auth),
    400,
    'unsupported_grant_type',
    'password grant (RFC 9700 2.4)',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'password', username: 'alice', password: DEMO_PASSWORD }, { authorization: webAuth() }),
    400,
    'unsupported_grant_type',
    'password grant for web',
  )
  await assertError(t, await postForm(tokenUrl(), { grant_type: 'implicit' }, auth), 400, 'unsupported_grant_type', 'implicit')
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'urn:ietf:params:oauth:grant-type:jwt-bearer', assertion: 'x.y.z' }, auth),
    400,
    // The server supports the JWT bearer grant (RFC 7523 2.1); this client may not use it (RFC 6749 5.2).
    'unauthorized_client',
    'jwt-bearer, not among the client grant_types',
  )
  await assertError(t, await postForm(tokenUrl(), { grant_type: '__proto__' }, auth), 400, 'unsupported_grant_type', '__proto__')
  await assertError(t, await postForm(tokenUrl(), { grant_type: 'CLIENT_CREDENTIALS' }, auth), 400, 'unsupported_grant_type', 'upper-cased grant type')
  await assertError(t, await postForm(tokenUrl(), { scope: 'orders:read' }, auth), 400, 'invalid_request', 'no grant_type')
  await assertError(
    t,
    await postForm(
      tokenUrl(),
      [
        ['grant_type', 'client_credentials'],
        ['grant_type', 'client_credentials'],
      ],
      auth,
    ),
    400,
    'invalid_request',
    'repeated grant_type',
  )
  await assertError(
    t,
    await postForm(
      tokenUrl(),
      [
        ['grant_type', 'client_credentials'],
        ['scope', 'orders:read'],
        ['scope', 'orders:read'],
      ],
      auth,
    ),
    400,
    'invalid_request',
    'repeated scope',
  )
  await assertError(
    t,
    await postForm(
      tokenUrl(),
      [
        ['grant_type', 'authorization_code'],
        ['code', 'a'],
        ['code', 'b'],
      ],
      { authorization: webAuth() },
    ),
    400,
    'invalid_request',
    'repeated code',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'client_credentials', client_id: 'cli' }),
    400,
    'unauthorized_client',
    'client_credentials for a public client',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'client_credentials' }, { authorization: webAuth() }),
    400,
    'unauthorized_client',
    'client_credentials for web (not registered for it)',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'refresh_token', refresh_token: 'x' }, auth),
    400,
    'unauthorized_client',
    'refresh_token for service',
  )
})

t.test('scope and audience cannot be widened', async (t) => {
  const auth = { authorization: basic('service', target.secret) }
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'client_credentials', scope: 'orders:write' }, auth),
    400,
    'invalid_scope',
    'a scope the client may not have',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'client_credentials', scope: 'orders:read admin' }, auth),
    400,
    'invalid_scope',
    'an unknown scope beside a good one',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'client_credentials', scope: 'openid' }, auth),
    400,
    'invalid_scope',
    'openid for a machine client',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'client_credentials', scope: 'orders:read', resource: 'https://evil.example/api' }, auth),
    400,
    'invalid_target',
    'resource naming an unknown audience',
  )
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'client_credentials', scope: 'orders:read', resource: `${target.url}#frag` }, auth),
    400,
    'invalid_target',
    'resource with a fragment',
  )
})

t.test('request formats: only a form POST is a token request', async (t) => {
  const auth = basic('service', target.secret)
  const json = await fetch(tokenUrl(), {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/json' },
    body: JSON.stringify({ grant_type: 'client_credentials' }),
  })
  await assertError(t, json, 400, 'invalid_request', 'JSON body')
  const plain = await fetch(tokenUrl(), {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'text/plain' },
    body: 'grant_type=client_credentials',
  })
  await assertError(t, plain, 400, 'invalid_request', 'text/plain body')
  const noType = await rawHttp(
    target.url,
    `POST /token HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\nContent-Length: 29\r\nConnection: close\r\n\r\ngrant_type=client_credentials`,
  )
  t.equal(noType.status, 400, 'no Content-Type: 400')
  t.match(noType.body, /"error":"invalid_request"/)
  t.equal(noType.headers.get('cache-control'), 'no-store')
  const get = await fetch(`${tokenUrl()}?grant_type=client_credentials&scope=orders:read`, { headers: { authorization: auth } })
  t.equal(get.status, 405, 'GET /token: 405')
  t.equal(get.headers.get('allow'), 'POST')
  t.notMatch(await get.text(), /access_token/, 'no token for a GET')
  const huge = await postForm(tokenUrl(), { grant_type: 'client_credentials', scope: 'orders:read '.repeat(9000) }, { authorization: auth })
  t.equal(huge.status, 413, '100 KB form: 413')
  await huge.arrayBuffer()
})

t.test('refresh tokens: bound to their client, never widened, rotated with reuse detection, dead after revocation', async (t) => {
  const { code, verifier } = await getCode('web', 'orders:read')
  const first = await tokensOf(t, await exchange(code, verifier), 'code exchange')
  const rt = first.refresh_token ?? ''
  t.ok(rt, 'a refresh token')
  const refresh = (token: string, auth: Record<string, string>, extra: Record<string, string> = {}): Promise<Response> =>
    postForm(tokenUrl(), { grant_type: 'refresh_token', refresh_token: token, ...extra }, auth)

  await assertError(t, await refresh(rt, { authorization: basic('web2', target.secret) }), 400, 'invalid_grant', "web2 presents web's refresh token")
  await assertError(
    t,
    await postForm(tokenUrl(), { grant_type: 'refresh_token', refresh_token: rt, client_id: 'cli' }),
    400,
    'invalid_grant',
    "cli presents web's refresh token",
  )
  await assertError(t, await refresh(rt, { authorization: webAuth() }, { scope: 'orders:read orders:write' }), 400, 'invalid_scope', 'wider scope')
  await assertError(t, await refresh(rt, { authorization: webAuth() }, { scope: 'openid' }), 400, 'invalid_scope', 'a scope not in the grant')
  await assertError(t, await refresh(rt, { authorization: webAuth() }, { resource: 'https://evil.example/' }), 400, 'invalid_target', 'another audience')
  t.equal(await gatewayStatus(first.access_token), 200, 'none of that touched the family')

  const second = await tokensOf(t, await refresh(rt, { authorization: webAuth() }), 'rightful refresh after the failures')
  t.not(second.refresh_token, rt, 'rotated')
  await assertError(t, await refresh(rt, { authorization: webAuth() }), 400, 'invalid_grant', 'the replaced refresh token reused')
  await assertError(t, await refresh(second.refresh_token ?? '', { authorization: webAuth() }), 400, 'invalid_grant', 'reuse revoked the current one too')
  t.equal(await eventuallyStatus(() => gatewayStatus(second.access_token), 401), 401, 'and the access tokens of the family')
  t.equal(await gatewayStatus(first.access_token), 401)

  // Revocation through /revoke kills a family the same way.
  const other = await getCode('web', 'orders:read')
  const third = await tokensOf(t, await exchange(other.code, other.verifier), 'another grant')
  const revoked = await postForm(`${target.url}/revoke`, { token: third.refresh_token ?? '', token_type_hint: 'refresh_token' }, { authorization: webAuth() })
  t.equal(revoked.status, 200)
  await assertError(t, await refresh(third.refresh_token ?? '', { authorization: webAuth() }), 400, 'invalid_grant', 'refresh after the family was revoked')
  t.equal(await eventuallyStatus(() => gatewayStatus(third.access_token), 401), 401, 'its access token is refused')
})

t.test('every invalid_grant above carried the same description (no oracle on the cause)', async (t) => {
  t.ok(grantDescriptions.size >= 1, 'invalid_grant answers were seen')
  t.equal(grantDescriptions.size, 1, `one description for all causes: ${JSON.stringify([...grantDescriptions])}`)
})
