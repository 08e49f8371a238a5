/**
 * RFC 9396 rich authorization requests at the authorization server: the
 * parsing module's refusals, canonical comparison and narrowing, then the
 * parameter through /authorize (consent shown and remembered per entry),
 * /par, /token (code, refresh narrowing, client_credentials), the token,
 * the token response, introspection and the metadata.
 */
import * as oauth from 'oauth4webapi'
import t, { type Test } from 'tap'
import { ManualClock } from '../../src/clock.js'
import { clientKeyPair, keyedClientLines } from '../helpers/keyed-clients.js'
import { decodeJwt } from 'jose'
import {
  AuthorizationDetailsTypes,
  MAX_AUTHORIZATION_DETAILS_BYTES,
  narrowAuthorizationDetails,
  parseAuthorizationDetails,
} from '../../src/as/authorization-details/authorization-details.js'
import { canonicalJson } from '../../src/crypto/canonical-json.js'
import { hashSecret } from '../../src/crypto/secret.js'
import { InvalidAuthorizationDetails } from '../../src/errors.js'
import { hashToken } from '../../src/store/hash.js'
import { authorizeUrl, CLIENT_SECRET, countCodes, formWith, frontYaml, loggedIn, pkce, startFront, type Front } from '../helpers/as-front.js'

const PAYMENT_SCHEMA = {
  type: 'object',
  required: ['type', 'instructedAmount', 'creditorAccount'],
  properties: {
    type: { const: 'payment_initiation' },
    actions: { type: 'array', items: { enum: ['initiate', 'status', 'cancel'] } },
    instructedAmount: {
      type: 'object',
      required: ['currency', 'amount'],
      properties: { currency: { type: 'string', pattern: '^[A-Z]{3}$' }, amount: { type: 'string', pattern: '^[0-9]+(\\.[0-9]{1,2})?$' } },
      additionalProperties: false,
    },
    creditorName: { type: 'string', maxLength: 200 },
    creditorAccount: { type: 'object', required: ['iban'], properties: { iban: { type: 'string', maxLength: 34 } }, additionalProperties: false },
    remittanceInformationUnstructured: { type: 'string', maxLength: 500 },
  },
  additionalProperties: false,
}
const ACCOUNT_SCHEMA = {
  type: 'object',
  required: ['type', 'locations'],
  properties: { type: { const: 'account_information' }, locations: { type: 'array', items: { type: 'string', format: 'uri' } } },
}

const types = new AuthorizationDetailsTypes({ payment_initiation: PAYMENT_SCHEMA, account_information: ACCOUNT_SCHEMA })
const ALLOWED = ['payment_initiation', 'account_information']

function payment(amount = '123.50', iban = 'DE02100100109307118603'): { type: string; [member: string]: unknown } {
  return {
    type: 'payment_initiation',
    actions: ['initiate', 'status'],
    instructedAmount: { currency: 'EUR', amount },
    creditorName: 'Merchant A',
    creditorAccount: { iban },
  }
}
const ACCOUNT = { type: 'account_information', locations: ['https://bank.example.com/accounts'] }

/** The description of the refusal `raw` gets. */
function refusal(raw: string, allowed: readonly string[] | undefined = ALLOWED): string {
  try {
    parseAuthorizationDetails(raw, types, allowed)
  } catch (err) {
    if (err instanceof InvalidAuthorizationDetails) return err.description ?? ''
    throw err
  }
  throw new Error('accepted')
}

t.test('parseAuthorizationDetails accepts declared, allowed, valid entries', async (t) => {
  const parsed = parseAuthorizationDetails(JSON.stringify([payment(), ACCOUNT]), types, ALLOWED)
  t.same(parsed, [payment(), ACCOUNT])
})

t.test('parseAuthorizationDetails refuses, naming the entry and the path, never the value', async (t) => {
  t.equal(refusal('{"type":"payment_initiation"}'), 'authorization_details is a JSON array of objects', 'not an array')
  t.equal(refusal('[{"type":'), 'authorization_details is not JSON')
  t.equal(refusal('[]'), 'authorization_details has no entries')
  t.equal(refusal('["payment_initiation"]'), 'authorization_details[0] is not a JSON object')
  t.equal(refusal('[{"amount":"1"}]'), 'authorization_details[0] has no string type')
  t.equal(refusal('[{"type":["payment_initiation"]}]'), 'authorization_details[0] has no string type')
  t.equal(refusal(JSON.stringify([payment(), { type: 'wire_transfer' }])), 'authorization_details[1] has a type this server does not know', 'unknown type')
  t.equal(refusal(JSON.stringify([ACCOUNT]), ['payment_initiation']), 'authorization_details[0] has a type this client may not request')
  t.throws(
    () => parseAuthorizationDetails(JSON.stringify([payment()]), types, undefined),
    new InvalidAuthorizationDetails('authorization_details[0] has a type this client may not request'),
    'a client allowed no types',
  )
  const secret = 'X'.repeat(40)
  const bad = refusal(JSON.stringify([{ ...payment(), instructedAmount: { currency: 'EUR', amount: secret } }]))
  t.equal(bad, 'authorization_details[0]: /instructedAmount/amount must match pattern "^[0-9]+(\\.[0-9]{1,2})?$"', 'schema failure: index and path')
  t.notMatch(bad, secret, 'the value is not echoed')
  t.match(refusal(JSON.stringify([{ ...payment(), extra: 1 }])), /^authorization_details\[0\]: \(the entry\) must NOT have additional properties$/)
  t.match(
    refusal(JSON.stringify([{ type: 'account_information', locations: ['not a uri'] }])),
    /^authorization_details\[0\]: \/locations\/0 must match format "uri"$/,
  )
  // Entries are compared by their RFC 8785 form; a value without one would be read otherwise by another parser.
  t.equal(
    refusal('[{"type":"account_information","locations":[],"note":"\\ud800"}]'),
    'authorization_details[0] has no canonical JSON form (a string with a lone surrogate)',
  )
  t.equal(
    refusal('[{"type":"account_information","locations":[],"id":9007199254740993}]'),
    'authorization_details[0] has no canonical JSON form (an integer beyond 2^53)',
  )
})

t.test('parseAuthorizationDetails bounds size and entries', async (t) => {
  const big = JSON.stringify([{ ...payment(), remittanceInformationUnstructured: 'x'.repeat(MAX_AUTHORIZATION_DETAILS_BYTES) }])
  t.equal(refusal(big), `authorization_details is larger than ${MAX_AUTHORIZATION_DETAILS_BYTES} bytes`)
  // Counted in UTF-8 bytes: 3000 three-byte characters are over the bound though 3000 characters are not.
  t.equal(
    refusal(JSON.stringify([{ ...payment(), creditorName: '€'.repeat(3000) }])),
    `authorization_details is larger than ${MAX_AUTHORIZATION_DETAILS_BYTES} bytes`,
  )
  t.equal(refusal(JSON.stringify(Array.from({ length: 17 }, () => ACCOUNT))), 'authorization_details has more than 16 entries')
})

t.test('a schema that cannot be used is refused when compiled, with the type named', async (t) => {
  t.throws(
    () => new AuthorizationDetailsTypes({ bad: { type: 'object', propertiez: {} } }),
    /type `bad`: its JSON Schema cannot be used: strict mode: unknown keyword: "propertiez"/,
  )
  t.throws(
    () => new AuthorizationDetailsTypes({ remote: { $ref: 'https://schemas.example.com/payment.json' } }),
    /type `remote`: its JSON Schema cannot be used: can't resolve reference/,
  )
  t.throws(() => new AuthorizationDetailsTypes({ odd: 'a string' }), /type `odd`: a JSON Schema is an object/)
})

t.test('canonical JSON: key order, whitespace, number forms and escapes do not matter; values do', async (t) => {
  const a = canonicalJson(JSON.parse('{"type":"p","amount":1,"to":{"iban":"DE1","name":"A"}}'))
  t.equal(canonicalJson(JSON.parse('{ "to" : { "name":"A", "iban":"DE1" }, "amount" : 1.0, "type":"p" }')), a)
  t.equal(canonicalJson(JSON.parse('{"type":"\\u0070","amount":1e0,"to":{"iban":"DE\\u0031","name":"A"}}')), a)
  t.not(canonicalJson(JSON.parse('{"type":"p","amount":2,"to":{"iban":"DE1","name":"A"}}')), a)
  t.not(canonicalJson(JSON.parse('{"type":"p","amount":"1","to":{"iban":"DE1","name":"A"}}')), a, 'a string is not a number')
  t.equal(canonicalJson({ b: [3, { z: null, a: true }], a: -0 }), '{"a":0,"b":[3,{"a":true,"z":null}]}')
})

t.test('narrowAuthorizationDetails: whole granted entries only', async (t) => {
  const granted = [payment(), ACCOUNT]
  t.same(narrowAuthorizationDetails(null, granted), granted, 'nothing asked keeps everything')
  t.same(narrowAuthorizationDetails([JSON.parse(JSON.stringify(ACCOUNT))], granted), [ACCOUNT])
  const reordered = {
    creditorAccount: { iban: 'DE02100100109307118603' },
    creditorName: 'Merchant A',
    instructedAmount: { amount: '123.50', currency: 'EUR' },
    actions: ['initiate', 'status'],
    type: 'payment_initiation',
  }
  t.same(narrowAuthorizationDetails([reordered as never], granted), [reordered], 'key order does not matter')
  t.throws(() => narrowAuthorizationDetails([payment('999.00') as never], granted), InvalidAuthorizationDetails, 'a larger amount is not a narrowing')
  t.throws(
    () => narrowAuthorizationDetails([{ ...payment(), actions: ['initiate'] } as never], granted),
    InvalidAuthorizationDetails,
    'a changed entry is not granted, even a smaller one',
  )
  t.throws(() => narrowAuthorizationDetails([ACCOUNT as never], undefined), InvalidAuthorizationDetails, 'nothing granted, nothing to narrow to')
})

/** The front-channel server with the two types declared and a client allowed them. */
async function startRar(t: Test, asExtra = ''): Promise<Front> {
  const secret = await hashSecret(CLIENT_SECRET)
  const yaml = await frontYaml({
    asExtra: `  authorization_details_types:
    payment_initiation: { schema: ${JSON.stringify(PAYMENT_SCHEMA)} }
    account_information: { schema: ${JSON.stringify(ACCOUNT_SCHEMA)} }
${asExtra}`,
    clientsExtra: `    - client_id: payer
      name: Payment App
      type: confidential
      secret_hash: "${secret}"
      redirect_uris: [https://pay.example.com/cb]
      grant_types: [authorization_code, refresh_token, client_credentials]
      scopes: [openid, orders:read]
      introspect: true
      authorization_details_types: [payment_initiation, account_information]
    - client_id: inhouse
      name: In-house App
      type: confidential
      secret_hash: "${secret}"
      redirect_uris: [https://inhouse.example.com/cb]
      grant_types: [authorization_code]
      scopes: [orders:read]
      skip_consent: true
      authorization_details_types: [payment_initiation]
`,
  })
  const front = await startFront(yaml)
  t.teardown(() => front.close())
  return front
}

const PAY_REDIRECT = 'https://pay.example.com/cb'

function payerParams(details: unknown, over: Record<string, string> = {}): Record<string, string> & { verifier: string } {
  const { verifier, challenge } = pkce()
  return {
    response_type: 'code',
    client_id: 'payer',
    redirect_uri: 'https://pay.example.com/cb',
    scope: 'orders:read',
    state: 's1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    authorization_details: typeof details === 'string' ? details : JSON.stringify(details),
    ...over,
    verifier,
  }
}

function authorizeParams(p: Record<string, string>): Record<string, string> {
  const { verifier: _, ...rest } = p
  return rest
}

const BASIC = `Basic ${Buffer.from(`payer:${CLIENT_SECRET}`).toString('base64')}`

async function tokenRequest(front: Front, body: Record<string, string> | URLSearchParams): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${front.url}/token`, {
    method: 'POST',
    headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
    body: body instanceof URLSearchParams ? body : new URLSearchParams(body),
  })
  return { status: res.status, json: (await res.json()) as Record<string, unknown> }
}

/** Press Allow on the consent page at `url` (the browser is signed in); the redirect to the client. */
async function allow(browser: Awaited<ReturnType<typeof loggedIn>>['browser'], url: string): Promise<{ page: string; location: URL }> {
  const res = await browser.get(url)
  const page = await res.text()
  if (res.status !== 200) throw new Error(`no consent page: ${res.status} ${res.headers.get('location')}`)
  const form = formWith(page, url, 'decision')
  const done = await browser.submit(form, { decision: 'allow' })
  return { page, location: new URL(done.headers.get('location') ?? '') }
}

t.test('authorization_details through the code flow, refresh narrowing and introspection', async (t) => {
  const front = await startRar(t)
  const { browser } = await loggedIn(front)
  const details = [payment(), ACCOUNT]
  const p = payerParams(details)
  const url = authorizeUrl(front, authorizeParams(p))
  const { page, location } = await allow(browser, url)
  t.match(page, '<h2 class="details-type"><bdi dir="ltr">payment_initiation</bdi></h2>', 'a heading per type')
  t.match(page, '&quot;amount&quot;: &quot;123.50&quot;', 'the entry as JSON')
  const code = location.searchParams.get('code')
  t.type(code, 'string', 'a code after Allow')

  const tokens = await tokenRequest(front, { grant_type: 'authorization_code', code: code ?? '', redirect_uri: PAY_REDIRECT, code_verifier: p.verifier })
  t.equal(tokens.status, 200)
  t.same(tokens.json.authorization_details, details, 'RFC 9396 7: the token response names the details')
  t.same(decodeJwt(String(tokens.json.access_token)).authorization_details, details, 'the JWT carries them')

  const intro = await fetch(`${front.url}/introspect`, {
    method: 'POST',
    headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: String(tokens.json.access_token) }),
  })
  t.same(((await intro.json()) as Record<string, unknown>).authorization_details, details, 'RFC 9396 9.2: introspection')

  const refreshToken = String(tokens.json.refresh_token)
  const narrowed = await tokenRequest(front, { grant_type: 'refresh_token', refresh_token: refreshToken, authorization_details: JSON.stringify([ACCOUNT]) })
  t.equal(narrowed.status, 200, 'a refresh may narrow to a granted entry')
  t.same(narrowed.json.authorization_details, [ACCOUNT])
  t.same(decodeJwt(String(narrowed.json.access_token)).authorization_details, [ACCOUNT])

  const grown = await tokenRequest(front, {
    grant_type: 'refresh_token',
    refresh_token: String(narrowed.json.refresh_token),
    authorization_details: JSON.stringify([payment('5000.00')]),
  })
  t.equal(grown.status, 400, 'an entry that was not granted is refused')
  t.equal(grown.json.error, 'invalid_authorization_details')
  t.equal(grown.json.error_description, 'authorization_details[0] was not granted: a token request may only narrow to entries the grant holds')

  const whole = await tokenRequest(front, { grant_type: 'refresh_token', refresh_token: String(narrowed.json.refresh_token) })
  t.equal(whole.status, 200)
  t.same(whole.json.authorization_details, details, 'the grant keeps every entry: a later refresh without the parameter gets them all')

  const twice = new URLSearchParams([
    ['grant_type', 'refresh_token'],
    ['refresh_token', String(whole.json.refresh_token)],
    ['authorization_details', JSON.stringify([ACCOUNT])],
    ['authorization_details', JSON.stringify([payment()])],
  ])
  const repeated = await tokenRequest(front, twice)
  t.equal(repeated.status, 400)
  t.equal(repeated.json.error, 'invalid_request', 'a repeated authorization_details is refused at /token')
})

t.test('the code exchange may narrow, never widen', async (t) => {
  const front = await startRar(t)
  const { browser } = await loggedIn(front)
  const p = payerParams([payment()])
  const { location } = await allow(browser, authorizeUrl(front, authorizeParams(p)))
  const code = location.searchParams.get('code') ?? ''
  const exchange = { grant_type: 'authorization_code', code, redirect_uri: PAY_REDIRECT, code_verifier: p.verifier }
  const wider = await tokenRequest(front, { ...exchange, authorization_details: JSON.stringify([payment(), ACCOUNT]) })
  t.equal(wider.status, 400)
  t.equal(wider.json.error, 'invalid_authorization_details')
  t.equal(wider.json.error_description, 'authorization_details[1] was not granted: a token request may only narrow to entries the grant holds')
  const same = await tokenRequest(front, { ...exchange, authorization_details: JSON.stringify([payment()]) })
  t.equal(same.status, 200, 'the code was left unused by the refused exchange')
  t.same(same.json.authorization_details, [payment()])
})

t.test('/authorize refuses bad authorization_details at the redirect URI, and issues no code', async (t) => {
  const front = await startRar(t)
  const { browser } = await loggedIn(front)
  const codes = countCodes(front.store)
  const cases: Array<[string, Record<string, string>, string]> = [
    ['unknown type', payerParams([{ type: 'wire_transfer' }]), 'invalid_authorization_details'],
    ['schema failure', payerParams([{ ...payment(), instructedAmount: { currency: 'euro', amount: '1' } }]), 'invalid_authorization_details'],
    ['not an array', payerParams(payment()), 'invalid_authorization_details'],
  ]
  for (const [name, p, error] of cases) {
    const res = await browser.get(authorizeUrl(front, authorizeParams(p)))
    t.equal(res.status, 302, `${name}: redirected`)
    const to = new URL(res.headers.get('location') ?? '')
    t.equal(to.origin + to.pathname, 'https://pay.example.com/cb', `${name}: to the client`)
    t.equal(to.searchParams.get('error'), error, name)
  }
  const p = authorizeParams(payerParams([payment()]))
  const repeated = Object.entries(p).concat([['authorization_details', JSON.stringify([ACCOUNT])]])
  const res = await browser.get(authorizeUrl(front, repeated))
  t.equal(new URL(res.headers.get('location') ?? '').searchParams.get('error'), 'invalid_request', 'a repeated authorization_details')
  const web = await browser.get(
    authorizeUrl(front, { ...authorizeParams(payerParams([payment()])), client_id: 'web', redirect_uri: 'https://app.example.com/callback' }),
  )
  const webTo = new URL(web.headers.get('location') ?? '')
  t.equal(webTo.searchParams.get('error'), 'invalid_authorization_details', 'a client allowed no types')
  t.equal(webTo.searchParams.get('error_description'), 'authorization_details[0] has a type this client may not request')
  t.equal(codes.count, 0, 'no code was stored')
})

t.test('consent is remembered per exact entry: a new value asks again', async (t) => {
  const front = await startRar(t)
  const { browser } = await loggedIn(front)
  await allow(browser, authorizeUrl(front, authorizeParams(payerParams([payment()]))))

  const again = await browser.get(authorizeUrl(front, authorizeParams(payerParams([JSON.parse(JSON.stringify(payment()))]))))
  t.equal(again.status, 302, 'the same entry: no consent page')
  t.type(new URL(again.headers.get('location') ?? '').searchParams.get('code'), 'string')

  const other = await browser.get(authorizeUrl(front, authorizeParams(payerParams([payment('123.51')]))))
  t.equal(other.status, 200, 'another amount: the consent page again')
  t.match(await other.text(), '123.51')
  const otherIban = await browser.get(authorizeUrl(front, authorizeParams(payerParams([payment('123.50', 'FR7630006000011234567890189')]))))
  t.equal(otherIban.status, 200, 'another account: the consent page again')
})

t.test('/par validates authorization_details as /authorize does, and the pushed details reach the token', async (t) => {
  const front = await startRar(t)
  const push = async (p: Record<string, string>): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await fetch(`${front.url}/par`, {
      method: 'POST',
      headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(p),
    })
    return { status: res.status, json: (await res.json()) as Record<string, unknown> }
  }
  const bad = await push(authorizeParams(payerParams([{ type: 'account_information', locations: 'https://x' }])))
  t.equal(bad.status, 400)
  t.same(bad.json, { error: 'invalid_authorization_details', error_description: 'authorization_details[0]: /locations must be array' })
  const big = await push(authorizeParams(payerParams([{ ...payment(), remittanceInformationUnstructured: 'x'.repeat(9000) }])))
  t.equal(big.status, 400, 'an oversized parameter (a form body can carry it where a URL cannot)')
  t.same(big.json, { error: 'invalid_authorization_details', error_description: 'authorization_details is larger than 8192 bytes' })

  const p = payerParams([ACCOUNT])
  const pushed = await push(authorizeParams(p))
  t.equal(pushed.status, 201)
  const { browser } = await loggedIn(front)
  const { page, location } = await allow(browser, authorizeUrl(front, { client_id: 'payer', request_uri: String(pushed.json.request_uri) }))
  t.match(page, 'account_information')
  const tokens = await tokenRequest(front, {
    grant_type: 'authorization_code',
    code: location.searchParams.get('code') ?? '',
    redirect_uri: PAY_REDIRECT,
    code_verifier: p.verifier,
  })
  t.same(tokens.json.authorization_details, [ACCOUNT])
})

t.test('client_credentials carries the types the client is allowed', async (t) => {
  const front = await startRar(t)
  const ok = await tokenRequest(front, { grant_type: 'client_credentials', scope: 'orders:read', authorization_details: JSON.stringify([ACCOUNT]) })
  t.equal(ok.status, 200)
  t.same(ok.json.authorization_details, [ACCOUNT])
  t.same(decodeJwt(String(ok.json.access_token)).authorization_details, [ACCOUNT])
  const robot = await fetch(`${front.url}/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`robot:${CLIENT_SECRET}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', authorization_details: JSON.stringify([ACCOUNT]) }),
  })
  t.equal(robot.status, 400)
  t.match(await robot.json(), { error: 'invalid_authorization_details', error_description: 'authorization_details[0] has a type this client may not request' })
})

t.test('the metadata lists the declared types', async (t) => {
  const front = await startRar(t)
  const meta = (await (await fetch(`${front.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>
  t.same(meta.authorization_details_types_supported, ['payment_initiation', 'account_information'])
})

t.test('an opaque token keeps its details for introspection', async (t) => {
  const front = await startRar(t, '  access_token: { format: opaque }\n')
  const ok = await tokenRequest(front, { grant_type: 'client_credentials', scope: 'orders:read', authorization_details: JSON.stringify([ACCOUNT]) })
  t.equal(ok.status, 200)
  const at = String(ok.json.access_token)
  t.same((await front.store.opaqueTokens.get(hashToken(at)))?.authorizationDetails, [ACCOUNT], 'stored with the token')
  const intro = await fetch(`${front.url}/introspect`, {
    method: 'POST',
    headers: { authorization: BASIC, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: at }),
  })
  const answer = (await intro.json()) as Record<string, unknown>
  t.equal(answer.active, true)
  t.same(answer.authorization_details, [ACCOUNT])
})

t.test('a registered client names only declared types, and may then request them', async (t) => {
  const front = await startRar(t, '  registration: { enabled: true, scopes: [orders:read], rate_limit: { per_address: 100, window: 1h } }\n')
  const register = (types: unknown): Promise<Response> =>
    fetch(`${front.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Desk Tool',
        redirect_uris: ['http://127.0.0.1:33418/callback'],
        token_endpoint_auth_method: 'none',
        scope: 'orders:read',
        authorization_details_types: types,
      }),
    })
  const undeclared = await register(['account_information', 'wire_transfer'])
  t.equal(undeclared.status, 400)
  t.same(await undeclared.json(), {
    error: 'invalid_client_metadata',
    error_description: 'authorization_details_types names a type this server does not declare',
  })
  t.equal((await register('account_information')).status, 400, 'not an array')
  const ok = await register(['account_information'])
  t.equal(ok.status, 201)
  const body = (await ok.json()) as Record<string, unknown>
  t.same(body.authorization_details_types, ['account_information'], 'echoed in the registration response')
  const { browser } = await loggedIn(front)
  const { challenge } = pkce()
  const url = authorizeUrl(front, {
    response_type: 'code',
    client_id: String(body.client_id),
    redirect_uri: 'http://127.0.0.1:33418/callback',
    scope: 'orders:read',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    authorization_details: JSON.stringify([ACCOUNT]),
  })
  const page = await browser.get(url)
  t.equal(page.status, 200, 'the consent page: the allowed type is accepted')
  t.match(await page.text(), 'account_information')
  const refused = await browser.get(
    authorizeUrl(front, { ...Object.fromEntries(new URL(url).searchParams), authorization_details: JSON.stringify([payment()]) }),
  )
  t.equal(new URL(refused.headers.get('location') ?? '').searchParams.get('error'), 'invalid_authorization_details', 'a type it did not register')
})

t.test('a signed request object carries authorization_details as a JSON array (RFC 9396 3)', async (t) => {
  const key = await clientKeyPair('jar-1')
  // oauth4webapi dates its assertions and request objects with Date.now(): the server's clock starts there.
  const yaml = await frontYaml({
    asExtra: `  authorization_details_types:
    account_information: { schema: ${JSON.stringify(ACCOUNT_SCHEMA)} }
`,
    clientsExtra: keyedClientLines({
      clientId: 'jar',
      name: 'Signed Requests',
      jwk: key.publicJwk,
      redirectUri: PAY_REDIRECT,
      grantTypes: ['authorization_code'],
      scopes: ['orders:read'],
      more: ['      require_signed_request_object: true', '      authorization_details_types: [account_information]'],
    }).join('\n'),
  })
  const front = await startFront(yaml, { clock: new ManualClock(Date.now()) })
  t.teardown(() => front.close())
  const insecure = { [oauth.allowInsecureRequests]: true } as const
  const as = await oauth.processDiscoveryResponse(
    new URL(front.issuer),
    await oauth.discoveryRequest(new URL(front.issuer), { algorithm: 'oauth2', ...insecure }),
  )
  const client: oauth.Client = { client_id: 'jar' }
  const auth = oauth.PrivateKeyJwt({ key: key.privateKey, kid: 'jar-1' })
  const { verifier, challenge } = pkce()
  const jar = await oauth.issueRequestObject(
    as,
    client,
    new URLSearchParams({
      response_type: 'code',
      redirect_uri: PAY_REDIRECT,
      scope: 'orders:read',
      state: 's-jar',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      authorization_details: JSON.stringify([ACCOUNT]),
    }),
    { key: key.privateKey, kid: 'jar-1' },
  )
  t.same(JSON.parse(Buffer.from(jar.split('.')[1] ?? '', 'base64url').toString()).authorization_details, [ACCOUNT], 'a JSON array claim')
  const pushed = await oauth.processPushedAuthorizationResponse(
    as,
    client,
    await oauth.pushedAuthorizationRequest(as, client, auth, { request: jar }, insecure),
  )
  const { browser } = await loggedIn(front)
  const { page, location } = await allow(browser, authorizeUrl(front, { client_id: 'jar', request_uri: pushed.request_uri }))
  t.match(page, 'account_information', 'shown on the consent page')
  const params = oauth.validateAuthResponse(as, client, location, 's-jar')
  const tokens = await oauth.processAuthorizationCodeResponse(
    as,
    client,
    await oauth.authorizationCodeGrantRequest(as, client, auth, params, PAY_REDIRECT, verifier, insecure),
  )
  t.same(tokens.authorization_details, [ACCOUNT])
})

t.test('a skip_consent client skips the page for scopes, never for authorization details', async (t) => {
  const front = await startRar(t)
  const { browser } = await loggedIn(front)
  const inhouse = (details: unknown = [payment()]): string =>
    authorizeUrl(front, authorizeParams(payerParams(details, { client_id: 'inhouse', redirect_uri: 'https://inhouse.example.com/cb' })))
  const plain = authorizeUrl(front, {
    response_type: 'code',
    client_id: 'inhouse',
    redirect_uri: 'https://inhouse.example.com/cb',
    scope: 'orders:read',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
  })
  t.equal((await browser.get(plain)).status, 302, 'scopes only: no consent page')
  const { page, location } = await allow(browser, inhouse())
  t.match(page, 'payment_initiation', 'details: the consent page')
  t.type(location.searchParams.get('code'), 'string')
  t.equal((await browser.get(inhouse())).status, 302, 'the same entry again: remembered')
  t.equal((await browser.get(inhouse([payment('1.00')]))).status, 200, 'another amount: asked again')
})
