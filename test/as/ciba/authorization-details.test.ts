/**
 * CIBA with RFC 9396 authorization_details: what the agent asks at /bc-authorize is validated
 * against the declared types the client may use, shown to the person with the approval, and
 * carried by the tokens the approval yields (access token claim, token response, introspection
 * of the refresh family's tokens).
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { hashSecret } from '../../../src/crypto/secret.js'
import { startAs } from '../../helpers/as-back.js'
import { basic as basicAuth } from '../../helpers/client-auth.js'
import { postForm, reply } from '../../helpers/http.js'
import { approvalIdOf, CIBA, decide } from '../../helpers/ciba.js'

const SECRET = 'payer-agent-secret-0123456789abcdefghijk'
const PAYMENT_SCHEMA = {
  type: 'object',
  required: ['type', 'instructedAmount'],
  properties: {
    type: { const: 'payment_initiation' },
    instructedAmount: {
      type: 'object',
      required: ['currency', 'amount'],
      properties: { currency: { type: 'string', pattern: '^[A-Z]{3}$' }, amount: { type: 'string', pattern: '^[0-9]+(\\.[0-9]{1,2})?$' } },
      additionalProperties: false,
    },
  },
}
const PAYMENT = { type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '500.00' } }

const h = await startAs({
  asExtra: `  ciba: { ttl: 120s, interval: 5s }
  authorization_details_types:
    payment_initiation: { schema: ${JSON.stringify(PAYMENT_SCHEMA)} }
    account_information: { schema: { type: object } }`,
  clientsExtra: `    - client_id: payer
      type: confidential
      secret_hash: "${await hashSecret(SECRET)}"
      grant_types: [ciba, refresh_token]
      scopes: [openid, orders:read]
      authorization_details_types: [payment_initiation]
`,
})
t.teardown(() => h.close())
const authorization = basicAuth('payer', SECRET)

function bcAuthorize(params: Record<string, string>) {
  return reply(postForm(`${h.url}/bc-authorize`, { scope: 'openid', login_hint: 'alice', ...params }, { authorization }))
}

t.test('the approved details are the approval’s, then the tokens’', async (t) => {
  const started = await bcAuthorize({ authorization_details: JSON.stringify([PAYMENT]), binding_message: 'Pay 500 EUR' })
  t.equal(started.status, 200, started.text)
  const authReqId = String(started.json?.auth_req_id)
  const approval = await h.as.approvals.get(approvalIdOf(authReqId))
  t.same(
    approval?.subject.kind === 'ciba' ? JSON.parse(approval.subject.authorizationDetailsJson ?? 'null') : null,
    [PAYMENT],
    'the person is asked about exactly these',
  )

  await decide(h, authReqId, 'approved')
  h.clock.advance(5000)
  const other = { type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '5000.00' } }
  const changed = await reply(
    postForm(`${h.url}/token`, { grant_type: CIBA, auth_req_id: authReqId, authorization_details: JSON.stringify([other]) }, { authorization }),
  )
  t.equal(changed.status, 400, 'details at the CIBA token request are refused, never dropped: they were asked at /bc-authorize')
  t.equal(changed.json?.error, 'invalid_request')
  t.notOk('access_token' in (changed.json ?? {}))
  const ok = await reply(postForm(`${h.url}/token`, { grant_type: CIBA, auth_req_id: authReqId }, { authorization }))
  t.equal(ok.status, 200, ok.text)
  t.same(ok.json?.authorization_details, [PAYMENT], 'the token response names them (RFC 9396 7)')
  t.same(decodeJwt(String(ok.json?.access_token)).authorization_details, [PAYMENT], 'the access token carries them')

  const refreshed = await reply(postForm(`${h.url}/token`, { grant_type: 'refresh_token', refresh_token: String(ok.json?.refresh_token) }, { authorization }))
  t.equal(refreshed.status, 200, refreshed.text)
  t.same(decodeJwt(String(refreshed.json?.access_token)).authorization_details, [PAYMENT], 'the grant keeps them for every refresh')
})

t.test('refused before any approval is opened: nothing reaches the person', async (t) => {
  const before = (await h.as.approvals.listForPerson('alice')).length
  const cases: Array<[string, string]> = [
    ['an empty list', '[]'],
    ['not JSON', '[{'],
    ['a type the server does not declare', JSON.stringify([{ type: 'wire_transfer' }])],
    ['a declared type the client may not use', JSON.stringify([{ type: 'account_information' }])],
    ['an entry its schema refuses', JSON.stringify([{ ...PAYMENT, instructedAmount: { currency: 'eur', amount: '5' } }])],
  ]
  for (const [name, value] of cases) {
    const r = await bcAuthorize({ authorization_details: value })
    t.equal(r.status, 400, name)
    t.equal(r.json?.error, 'invalid_authorization_details', name)
  }
  t.equal((await h.as.approvals.listForPerson('alice')).length, before, 'no approval was opened')
})
