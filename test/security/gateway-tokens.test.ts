/**
 * Attacks on bearer-token validation at the gateway of the real binary
 * (docs/architecture.md, the validation order; RFC 6750 2, 3; RFC 8725;
 * RFC 9068). bearward signs with a key this file knows (kid k1), so tokens
 * can be forged with the right key and exactly one thing wrong.
 *
 * Every refusal: the exact status and error code in the Bearer challenge
 * and the body, no token and no internal detail in either, and the upstream
 * receives nothing.
 */
import t, { type Test } from 'tap'
import { createHmac, createPrivateKey, createPublicKey, generateKeyPairSync, sign as cryptoSign, type JsonWebKey, type KeyObject } from 'node:crypto'
import { exportJWK } from 'jose'
import { Browser, authorizeAsPerson } from '../helpers/browser.js'
import { DEMO_PASSWORD } from '../helpers/as-config.js'
import { startUpstream } from '../helpers/upstream.js'
import {
  AT_HEADER,
  INTERNAL_WORDS,
  accessClaims,
  b64url,
  basic,
  eventuallyStatus,
  healthy,
  pkce,
  postForm,
  rawHttp,
  serviceToken,
  signEs256,
  startTarget,
  type Target,
} from '../helpers/attack.js'

let target: Target

t.before(async () => {
  target = await startTarget({
    routes: (upstream) => `
  - name: flexible
    match: { path: /flexible }
    upstream: ${upstream}
    token_in_query: true
    token_in_body: true
    scopes: { "*": [orders:read] }
  - name: billing
    match: { path: /billing }
    upstream: ${upstream}
    audience: https://billing.example
    scopes: { "*": [orders:read] }
`,
  })
})
t.teardown(() => target.close())

const forge = (claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): string =>
  signEs256(target.key, { ...AT_HEADER, ...header }, accessClaims(target, claims))

/** Sign `header.payload` with an arbitrary asymmetric key (RS256 / PS256 / ES384 / EdDSA forgeries). */
function signWith(key: KeyObject, header: Record<string, unknown>, payload: unknown, algorithm: string | null, padding?: number): string {
  const input = `${b64url(header)}.${b64url(payload)}`
  const sig = cryptoSign(algorithm, Buffer.from(input), padding === undefined ? { key, dsaEncoding: 'ieee-p1363' } : { key, padding })
  return `${input}.${sig.toString('base64url')}`
}

function hmac(header: Record<string, unknown>, payload: unknown, secret: string | Buffer, hash = 'sha256'): string {
  const input = `${b64url(header)}.${b64url(payload)}`
  return `${input}.${createHmac(hash, secret).update(input).digest('base64url')}`
}

interface Call {
  res: Response
  body: string
  challenge: string
}

async function call(authorization: string | null, path = '/orders/1', init: RequestInit = {}): Promise<Call> {
  const headers = new Headers(init.headers)
  if (authorization !== null) headers.set('authorization', authorization)
  const res = await fetch(`${target.url}${path}`, { ...init, headers })
  return { res, body: await res.text(), challenge: res.headers.get('www-authenticate') ?? '' }
}

/**
 * The request was refused with `status` and `error` (none: a bare challenge),
 * leaks nothing, and the upstream saw nothing.
 */
async function assertRefused(t: Test, send: () => Promise<Call>, status: number, error: string | null, label: string, token?: string): Promise<void> {
  const before = target.upstream.seen.length
  const { res, body, challenge } = await send()
  t.equal(res.status, status, `${label}: ${status}`)
  t.match(challenge, /^Bearer realm="bearward"/, `${label}: Bearer challenge`)
  if (error === null) {
    t.notMatch(challenge, /error=/, `${label}: bare challenge, no error attribute`)
  } else {
    t.match(challenge, new RegExp(`error="${error}"`), `${label}: error="${error}" in the challenge`)
    t.match(body, new RegExp(`"error":"${error}"`), `${label}: error in the body`)
  }
  t.notMatch(`${challenge}\n${body}`, INTERNAL_WORDS, `${label}: no internal detail`)
  if (token !== undefined && token.length >= 8) {
    for (const part of token.split('.').filter((p) => p.length >= 8)) {
      t.notOk(challenge.includes(part) || body.includes(part), `${label}: the token is not echoed`)
    }
  }
  t.equal(target.upstream.seen.length, before, `${label}: the upstream received nothing`)
}

const invalid = (t: Test, token: string, label: string): Promise<void> => assertRefused(t, () => call(`Bearer ${token}`), 401, 'invalid_token', label, token)

t.test('a correctly forged token works (so each refusal below is about the one thing changed)', async (t) => {
  const { res } = await call(`Bearer ${forge()}`)
  t.equal(res.status, 200)
})

t.test('alg none in any spelling is refused (SPEC 5.2)', async (t) => {
  const payload = accessClaims(target)
  for (const alg of ['none', 'None', 'NONE', 'nOnE', '', 'none ']) {
    const unsigned = `${b64url({ alg, typ: 'at+jwt', kid: 'k1' })}.${b64url(payload)}.`
    await invalid(t, unsigned, `alg ${JSON.stringify(alg)} unsigned`)
    const signed = signEs256(target.key, { alg, typ: 'at+jwt', kid: 'k1' }, payload)
    await invalid(t, signed, `alg ${JSON.stringify(alg)} with an ES256 signature`)
  }
  await invalid(t, `${b64url({ typ: 'at+jwt', kid: 'k1' })}.${b64url(payload)}.`, 'no alg at all')
  await invalid(t, signEs256(target.key, { alg: ['ES256'], typ: 'at+jwt', kid: 'k1' }, payload), 'alg as an array')
})

t.test('algorithm confusion: the public key as an HMAC secret, other key types, other curves (RFC 8725 2.1, 3.1)', async (t) => {
  const jwks = (await (await fetch(`${target.url}/jwks.json`)).json()) as { keys: Array<Record<string, string>> }
  const pub = jwks.keys[0] ?? {}
  const privateKey = createPrivateKey({ key: target.key as JsonWebKey, format: 'jwk' })
  const pem = createPublicKey(privateKey).export({ type: 'spki', format: 'pem' }).toString()
  const payload = accessClaims(target)
  const secrets: Array<[string, string | Buffer]> = [
    ['the JWKS entry (JSON)', JSON.stringify(pub)],
    ['the public key PEM', pem],
    ['the PEM without its newline', pem.trim()],
    ['the x coordinate', pub.x ?? ''],
    ['the decoded x coordinate', Buffer.from(pub.x ?? '', 'base64url')],
  ]
  for (const hash of ['sha256', 'sha384', 'sha512']) {
    const alg = `HS${hash.slice(3)}`
    for (const [label, secret] of secrets) await invalid(t, hmac({ alg, typ: 'at+jwt', kid: 'k1' }, payload, secret, hash), `${alg} keyed with ${label}`)
  }
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
  await invalid(t, signWith(rsa, { alg: 'RS256', typ: 'at+jwt', kid: 'k1' }, payload, 'sha256', 1), 'RS256 by a foreign RSA key, kid k1')
  await invalid(t, signWith(rsa, { alg: 'PS256', typ: 'at+jwt', kid: 'k1' }, payload, 'sha256', 6), 'PS256 by a foreign RSA key, kid k1')
  await invalid(t, signWith(rsa, { alg: 'RS256', typ: 'at+jwt' }, payload, 'sha256', 1), 'RS256 by a foreign RSA key, no kid')
  const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey
  await invalid(t, signWith(p384, { alg: 'ES384', typ: 'at+jwt', kid: 'k1' }, payload, 'sha384'), 'ES384 by a foreign key, kid k1')
  const ed = generateKeyPairSync('ed25519').privateKey
  await invalid(t, signWith(ed, { alg: 'EdDSA', typ: 'at+jwt', kid: 'k1' }, payload, null), 'EdDSA by a foreign key, kid k1')
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
  await invalid(t, signWith(other, { alg: 'ES256', typ: 'at+jwt', kid: 'k1' }, payload, 'sha256'), 'ES256 by a foreign P-256 key claiming kid k1')
  await invalid(t, signEs256(target.key, { alg: 'ES384', typ: 'at+jwt', kid: 'k1' }, payload), 'our ES256 signature labelled ES384')
  await invalid(t, signEs256(target.key, { alg: 'RS256', typ: 'at+jwt', kid: 'k1' }, payload), 'our ES256 signature labelled RS256')
})

t.test('kid is looked up among trusted keys only; injection attempts are just unknown kids', async (t) => {
  for (const kid of [
    '../../etc/passwd',
    '/dev/null',
    'file:///etc/passwd',
    'http://127.0.0.1:1/jwks.json',
    "k1' OR '1'='1",
    'k1; DROP TABLE keys',
    'k1\u0000',
    'K1',
    ' k1',
    'x'.repeat(5000),
    '__proto__',
    'constructor',
  ]) {
    await invalid(t, forge({}, { kid }), `kid ${JSON.stringify(kid.slice(0, 40))}`)
  }
  await invalid(t, forge({}, { kid: 1 }), 'kid as a number')
  await invalid(t, forge({}, { kid: null }), 'kid null')
  await invalid(t, forge({}, { kid: { $ne: '' } }), 'kid as an object')
  t.ok(await healthy(target), 'still healthy')
})

t.test('jku, x5u, jwk and x5c are never followed or trusted (RFC 8725 3.10)', async (t) => {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const attackerJwk = { ...(await exportJWK(pair.publicKey)), kid: 'evil', alg: 'ES256', use: 'sig' }
  const keyServer = await startUpstream('attacker-jwks', (_req, res) => {
    const body = JSON.stringify({ keys: [attackerJwk] })
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(body)
  })
  t.teardown(() => keyServer.close())
  const payload = accessClaims(target)
  const byAttacker = (header: Record<string, unknown>): string => signWith(pair.privateKey, { alg: 'ES256', typ: 'at+jwt', ...header }, payload, 'sha256')
  await invalid(t, byAttacker({ kid: 'evil', jku: `${keyServer.url}/jwks.json` }), 'jku to an attacker JWKS')
  await invalid(t, byAttacker({ kid: 'k1', jku: `${keyServer.url}/jwks.json` }), 'jku with our kid')
  await invalid(t, byAttacker({ kid: 'evil', x5u: `${keyServer.url}/cert.pem` }), 'x5u')
  await invalid(t, byAttacker({ jwk: attackerJwk }), 'embedded jwk of the attacker key')
  await invalid(t, byAttacker({ kid: 'k1', jwk: attackerJwk }), 'embedded jwk with our kid')
  await invalid(t, byAttacker({ x5c: ['MIIBszCCAVmgAwIBAgIU'] }), 'x5c chain')
  await invalid(t, forge({}, { jku: `${keyServer.url}/jwks.json` }), 'our own valid signature plus a jku header')
  await invalid(t, forge({}, { crit: ['exp'] }), 'crit naming a claim')
  await invalid(t, forge({}, { crit: ['x-custom'], 'x-custom': 1 }), 'crit with an unknown extension')
  t.equal(keyServer.seen.length, 0, 'the attacker key server received no request')
})

t.test('right key, wrong claims: iss, aud, exp, nbf, typ (SPEC 5.5 to 5.7, RFC 9068 4)', async (t) => {
  const now = Math.floor(Date.now() / 1000)
  const cases: Array<[string, Record<string, unknown>, Record<string, unknown>?]> = [
    ['wrong iss', { iss: 'https://evil.example' }],
    ['iss with a trailing slash', { iss: `${target.url}/` }],
    ['iss upper-cased', { iss: target.url.toUpperCase() }],
    ['iss missing', { iss: undefined }],
    ['iss as an array', { iss: [target.url] }],
    ['wrong aud', { aud: 'https://evil.example' }],
    ['aud = the client id', { aud: 'web' }],
    ['aud missing', { aud: undefined }],
    ['aud with a trailing slash', { aud: `${target.url}/` }],
    ['expired far beyond the skew', { iat: now - 3600, exp: now - 600 }],
    ['expired 2 minutes ago', { iat: now - 600, exp: now - 120 }],
    ['nbf 2 minutes ahead', { nbf: now + 120 }],
    ['nbf far in the future', { nbf: now + 86400 }],
    ['no exp', { exp: undefined }],
    ['exp as a string', { exp: String(now + 300) }],
    ['exp null', { exp: null }],
    ['sub as an object', { sub: { admin: true } }],
    ['scope as a number', { scope: 7 }],
    ['typ JWT (an ID token, not an access token)', {}, { typ: 'JWT' }],
    ['no typ', {}, { typ: undefined }],
    ['typ at+jwt with extra text', {}, { typ: 'at+jwt; x=1' }],
  ]
  for (const [label, claims, header] of cases) await invalid(t, forge(claims, header ?? {}), label)
})

t.test('a real ID token is not an access token, and tokens are not spliced', async (t) => {
  const { verifier, challenge } = pkce()
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: 'http://127.0.0.1:5555/callback',
    scope: 'openid orders:read',
    state: 's',
    nonce: 'n',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })
  const cb = await authorizeAsPerson(new Browser(), `${target.url}/authorize?${q}`, { username: 'alice', password: DEMO_PASSWORD })
  const res = await postForm(
    `${target.url}/token`,
    { grant_type: 'authorization_code', code: cb.searchParams.get('code') ?? '', redirect_uri: 'http://127.0.0.1:5555/callback', code_verifier: verifier },
    { authorization: basic('web', target.secret) },
  )
  const tokens = (await res.json()) as { access_token: string; id_token: string; refresh_token: string }
  t.ok(tokens.id_token, 'an ID token was issued')
  await invalid(t, tokens.id_token, 'the ID token as a bearer token')
  await assertRefused(
    t,
    () => call(`Bearer ${tokens.refresh_token}`),
    400,
    'invalid_request',
    'the refresh token as a bearer token (not three segments)',
    tokens.refresh_token,
  )

  const [h, p, s] = tokens.access_token.split('.') as [string, string, string]
  const widened = { ...(JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>), scope: 'orders:read orders:write', sub: 'admin' }
  await invalid(t, `${h}.${b64url(widened)}.${s}`, 'payload altered, original signature')
  const otherToken = await serviceToken(target)
  const [, p2, s2] = otherToken.split('.') as [string, string, string]
  await invalid(t, `${h}.${p2}.${s}`, "another token's payload with this signature")
  await invalid(t, `${h}.${p}.${s2}`, "another token's signature")
  await invalid(t, `${h}.${p}.`, 'signature stripped (a.b.)')
  await invalid(t, `${h}.${p}.${s.slice(0, -4)}`, 'signature truncated')
  await invalid(t, `${h}.${p}.${'A'.repeat(86)}`, 'signature zeroed')
  await invalid(t, `${b64url({ alg: 'ES256', typ: 'at+jwt', kid: 'k1', x: 1 })}.${p}.${s}`, 'header altered')
  t.equal((await call(`Bearer ${tokens.access_token}`)).res.status, 200, 'the untouched access token still works')
})

t.test('not three segments is 400 invalid_request (SPEC 5.1)', async (t) => {
  const token = forge()
  const [h, p, s] = token.split('.') as [string, string, string]
  for (const [label, value] of [
    ['two segments', `${h}.${p}`],
    ['four segments', `${token}.${s}`],
    ['five segments (JWE shape)', `${h}.${p}.${s}.${s}.${s}`],
    ['one segment', h],
    ['opaque junk', 'notajwtatall'],
  ] as Array<[string, string]>) {
    await assertRefused(t, () => call(`Bearer ${value}`), 400, 'invalid_request', label, value)
  }
  await invalid(t, '..', 'three empty segments')
  await invalid(t, `${h}..${s}`, 'empty payload')
})

t.test('the Authorization header: Bearer grammar, scheme case, other schemes (RFC 6750 2.1, 3)', async (t) => {
  const token = forge()
  t.equal((await call(`bearer ${token}`)).res.status, 200, 'lower-case scheme accepted (RFC 9110 11.1)')
  t.equal((await call(`BEARER ${token}`)).res.status, 200, 'upper-case scheme accepted')
  t.equal((await call(`Bearer  ${token}`)).res.status, 200, 'two spaces: 1*SP allows it')
  await assertRefused(t, () => call(null), 401, null, 'no Authorization')
  await assertRefused(t, () => call(`Basic ${Buffer.from('alice:pw').toString('base64')}`), 401, null, 'Basic scheme: a bare Bearer challenge')
  await assertRefused(t, () => call(`Digest username="alice"`), 401, null, 'Digest scheme')
  await assertRefused(t, () => call(`Bearer${token}`), 401, null, 'no space after Bearer: not the Bearer scheme')
  await assertRefused(t, () => call('Bearer'), 400, 'invalid_request', 'Bearer with no token')
  await assertRefused(t, () => call(`Bearer\t${token}`), 400, 'invalid_request', 'tab instead of space', token)
  await assertRefused(t, () => call(`Bearer ${token} extra`), 400, 'invalid_request', 'two tokens', token)
  await assertRefused(t, () => call(`Bearer ${token},`), 400, 'invalid_request', 'trailing comma', token)
  await assertRefused(t, () => call(`Bearer "${token}"`), 400, 'invalid_request', 'quoted token', token)
  await assertRefused(t, () => call(`Bearer ${token.replace('.', '.\u00e9')}`), 400, 'invalid_request', 'a Latin-1 byte in the token')

  const before = target.upstream.seen.length
  for (const [label, header] of [
    ['CRLF: obs-fold continuation', `Authorization: Bearer\r\n ${token}`],
    ['bare CR in the value', `Authorization: Bearer ${token}\rX-Auth-Subject: admin`],
    ['NUL in the value', `Authorization: Bearer ${token}\u0000`],
    ['UTF-8 bytes in the token', `Authorization: Bearer ${token.slice(0, 20)}\u00c3\u00a9${token.slice(20)}`],
    ['two Authorization headers', `Authorization: Bearer ${token}\r\nAuthorization: Bearer ${forge({ sub: 'admin' })}`],
  ] as Array<[string, string]>) {
    const r = await rawHttp(target.url, Buffer.from(`GET /orders/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n${header}\r\nConnection: close\r\n\r\n`, 'latin1'))
    t.equal(r.status, 400, `${label}: 400`)
  }
  t.equal(target.upstream.seen.length, before, 'none of the malformed headers reached the upstream')
})

t.test('one token, one method: header + query or body is 400; query only where the route allows it', async (t) => {
  const token = forge()
  t.equal((await call(null, `/flexible/1?access_token=${token}`)).res.status, 200, 'query token on a route that allows it')
  await assertRefused(t, () => call(`Bearer ${token}`, `/flexible/1?access_token=${token}`), 400, 'invalid_request', 'header + query', token)
  await assertRefused(t, () => call(null, `/flexible/1?access_token=${token}&access_token=${token}`), 400, 'invalid_request', 'query twice', token)
  await assertRefused(
    t,
    () =>
      call(`Bearer ${token}`, '/flexible/1', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `access_token=${token}`,
      }),
    400,
    'invalid_request',
    'header + form body',
    token,
  )
  await assertRefused(
    t,
    () =>
      call(null, `/flexible/1?access_token=${token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: `access_token=${token}`,
      }),
    400,
    'invalid_request',
    'query + form body',
    token,
  )
  await assertRefused(t, () => call(null, `/orders/1?access_token=${token}`), 400, 'invalid_request', 'query token where the route does not take one', token)
  await assertRefused(
    t,
    () => call(`Bearer ${token}`, `/orders/1?access_token=${token}`),
    400,
    'invalid_request',
    'header + query where the route takes no query token',
    token,
  )
})

t.test('a percent-encoded access_token name is still an access_token parameter (no second token smuggled upstream)', async (t) => {
  // takeQueryToken decodes parameter names, but the route-level pre-check looks
  // for the literal text "access_token": `%61ccess_token` skips it, so a header
  // token is accepted and a second token rides along in the forwarded query,
  // to the upstream and its logs (which decode it as access_token).
  const token = forge()
  const other = forge({ sub: 'someone-else' })
  for (const name of ['%61ccess_token', 'access%5Ftoken', 'acce%73s_token']) {
    const before = target.upstream.seen.length
    const { res } = await call(`Bearer ${token}`, `/orders/1?${name}=${other}`)
    t.equal(res.status, 400, `header + ?${name}=<token>: 400 invalid_request (token sent two ways)`)
    t.equal(
      target.upstream.seen.at(-1)?.url.includes(other) && target.upstream.seen.length > before,
      false,
      `header + ?${name}=: the second token does not reach the upstream`,
    )
  }
  const before = target.upstream.seen.length
  const { res } = await call(null, `/orders/1?%61ccess_token=${other}`)
  t.ok(res.status === 400 || res.status === 401, `query-only encoded name is refused (${res.status})`)
  t.equal(target.upstream.seen.length, before, 'and not forwarded')
})

t.test('a token for one audience is refused at a route for another (RFC 8707, SPEC 5.6)', async (t) => {
  const billing = await postForm(
    `${target.url}/token`,
    { grant_type: 'client_credentials', scope: 'orders:read', resource: 'https://billing.example' },
    { authorization: basic('service', target.secret) },
  )
  const billingToken = ((await billing.json()) as { access_token: string }).access_token
  t.equal((await call(`Bearer ${billingToken}`, '/billing/1')).res.status, 200, 'the billing token works at /billing')
  await invalid(t, billingToken, 'the billing token at /orders')
  const ordersToken = await serviceToken(target)
  await assertRefused(t, () => call(`Bearer ${ordersToken}`, '/billing/1'), 401, 'invalid_token', 'the default-audience token at /billing', ordersToken)
  await assertRefused(
    t,
    () => call(`Bearer ${forge({ aud: ['https://billing.example', 'https://other.example'] })}`),
    401,
    'invalid_token',
    'a forged multi-audience token without ours',
  )
})

t.test('the published JWKS holds public keys only', async (t) => {
  const jwks = (await (await fetch(`${target.url}/jwks.json`)).json()) as { keys: Array<Record<string, unknown>> }
  t.ok(jwks.keys.length > 0)
  for (const key of jwks.keys) {
    for (const member of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth']) t.notOk(member in key, `no private member ${member} in kid ${String(key.kid)}`)
  }
})

t.test('oversized and revoked tokens', async (t) => {
  const huge = await rawHttp(
    target.url,
    `GET /orders/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${'a'.repeat(100 * 1024)}\r\nConnection: close\r\n\r\n`,
  )
  t.equal(huge.status, 431, '100 KB token: 431 Request Header Fields Too Large')
  const big = 'A'.repeat(5000)
  await assertRefused(t, () => call(`Bearer ${big}.${big}.${big}`), 401, 'invalid_token', '15 KB three-segment junk')
  t.ok(await healthy(target), 'healthz after the big tokens')

  const token = await serviceToken(target)
  t.equal((await call(`Bearer ${token}`)).res.status, 200, 'valid before revocation')
  const revoke = await postForm(`${target.url}/revoke`, { token }, { authorization: basic('service', target.secret) })
  t.equal(revoke.status, 200)
  t.equal(await eventuallyStatus(async () => (await call(`Bearer ${token}`)).res.status, 401), 401, 'refused after /revoke')
  await assertRefused(t, () => call(`Bearer ${token}`), 401, 'invalid_token', 'revoked token', token)
})
