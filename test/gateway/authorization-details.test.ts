/**
 * RFC 9396 at the gateway: a route's `authorization_details: { type }`
 * refuses a token without an entry of that type (403
 * insufficient_authorization_details, nothing forwarded), and
 * `identity_headers.authorization_details` sends the matching entries
 * upstream as printable-ASCII compact JSON, at most 4 KiB, with any
 * client-sent copy stripped. Tokens are minted in the test with the
 * built-in issuer's key.
 */
import t from 'tap'
import { asciiJson, MAX_AUTHORIZATION_DETAILS_HEADER_BYTES } from '../../src/gateway/authorization-details.js'
import { startGateway } from './fixture.js'

const PAYMENT = { type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '12.00' }, creditorName: 'Café <b>Ünïcode</b>' }
const ACCOUNT = { type: 'account_information', locations: ['https://bank.example.com/accounts'] }

function routes(up: string): string {
  return `
  - name: pay
    match: { path: /pay }
    upstream: ${up}
    authorization_details: { type: payment_initiation }
    identity_headers: { authorization_details: X-Payment-Details }
  - name: all
    match: { path: /all }
    upstream: ${up}
    identity_headers: { authorization_details: X-Authorization-Details }
  - name: demand-only
    match: { path: /demand }
    upstream: ${up}
    authorization_details: { type: account_information }
  - name: plain
    match: { path: /plain }
    upstream: ${up}
`
}

t.test('a route that demands a type, and the header it forwards', async (t) => {
  const gw = await startGateway({ routes })
  t.teardown(() => gw.close())

  t.test('a token with an entry of the type is forwarded with the matching entries only', async (t) => {
    const token = await gw.mint({ claims: { authorization_details: [PAYMENT, ACCOUNT] } })
    const res = await gw.get('/pay/1', token, { 'x-payment-details': '[{"type":"payment_initiation","amount":"1000000"}]' })
    t.equal(res.status, 200)
    const seen = gw.upstream.seen.at(-1)
    const values = (seen?.rawHeaders ?? []).filter((_, i, raw) => i % 2 === 1 && raw[i - 1]?.toLowerCase() === 'x-payment-details')
    t.equal(values.length, 1, "one header: the client's copy was stripped")
    const value = values[0] ?? ''
    t.match(value, /^[\x20-\x7e]+$/, 'printable ASCII')
    t.same(JSON.parse(value), [PAYMENT], 'only the entries of the route type, the same JSON once decoded')
    t.equal(value, asciiJson([PAYMENT]))
  })

  t.test('a token without an entry of the type: 403, nothing forwarded', async (t) => {
    for (const [name, claims] of [
      ['no claim', {}],
      ['another type only', { authorization_details: [ACCOUNT] }],
      ['a claim that is not an array of typed objects', { authorization_details: { type: 'payment_initiation' } }],
      ['an entry without a type', { authorization_details: [PAYMENT, { amount: '1' }] }],
    ] as const) {
      const before = gw.upstream.seen.length
      const res = await gw.get('/pay/1', await gw.mint({ claims }))
      t.equal(res.status, 403, name)
      t.match(
        res.headers['www-authenticate'],
        /^Bearer realm="bearward", error="insufficient_authorization_details", error_description="The access token does not hold the authorization details this request needs", authorization_details_type="payment_initiation"/,
        name,
      )
      t.match(JSON.parse(res.body), { error: 'insufficient_authorization_details' })
      t.equal(gw.upstream.seen.length, before, `${name}: nothing reached the upstream`)
    }
    t.equal(gw.metrics.tokenValidations.get({ result: 'insufficient_authorization_details' }), 4, 'counted as their own result')
  })

  t.test('entries too large for the header are refused, not dropped', async (t) => {
    const big = { ...PAYMENT, creditorName: 'é'.repeat(MAX_AUTHORIZATION_DETAILS_HEADER_BYTES / 4) }
    const before = gw.upstream.seen.length
    const res = await gw.get('/pay/1', await gw.mint({ claims: { authorization_details: [big] } }))
    t.equal(res.status, 403)
    t.match(JSON.parse(res.body), { error: 'insufficient_authorization_details', error_description: /larger than the 4096 bytes this route forwards/ })
    t.equal(gw.upstream.seen.length, before, 'nothing reached the upstream')
  })

  t.test('a route with only the header forwards every entry, and none when the token has none', async (t) => {
    let res = await gw.get('/all/1', await gw.mint({ claims: { authorization_details: [PAYMENT, ACCOUNT] } }))
    t.equal(res.status, 200)
    t.same(JSON.parse(String(gw.upstream.seen.at(-1)?.headers['x-authorization-details'])), [PAYMENT, ACCOUNT])
    res = await gw.get('/all/1', await gw.mint(), { 'x-authorization-details': '[{"type":"forged"}]' })
    t.equal(res.status, 200, 'no details: the route still serves')
    t.equal(gw.upstream.seen.at(-1)?.headers['x-authorization-details'], undefined, "no header, and the client's copy is stripped")
  })

  t.test('a route with only the demand sends no header', async (t) => {
    const res = await gw.get('/demand/1', await gw.mint({ claims: { authorization_details: [ACCOUNT] } }))
    t.equal(res.status, 200)
    const names = (gw.upstream.seen.at(-1)?.rawHeaders ?? []).filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase())
    t.notOk(
      names.some((n) => n.includes('details')),
      'no details header',
    )
    t.equal((await gw.get('/demand/1', await gw.mint({ claims: { authorization_details: [PAYMENT] } }))).status, 403)
  })

  t.test('a route without either pays nothing and forwards no details', async (t) => {
    const res = await gw.get('/plain/1', await gw.mint({ claims: { authorization_details: [PAYMENT] } }), { 'x-payment-details': 'forged' })
    t.equal(res.status, 200)
    t.equal(gw.upstream.seen.at(-1)?.headers['x-payment-details'], undefined, 'a header another route uses is stripped on every route')
  })
})

t.test('asciiJson escapes everything outside printable ASCII and decodes to the same JSON', async (t) => {
  const value = [{ type: 'p', name: 'é\u202e\u0000😀\n' }]
  const text = asciiJson(value)
  t.match(text, /^[\x20-\x7e]+$/)
  t.same(JSON.parse(text), value)
})
