/**
 * An outside attacker's pass over RFC 9396 `authorization_details` (issue #41): a client tries to
 * widen what the person approved by respelling, reordering or nesting, or to get entries past the
 * type's schema. Refusals are `invalid_authorization_details`, at parse time, before anything is
 * shown or stored.
 */
import t from 'tap'
import { AuthorizationDetailsTypes, narrowAuthorizationDetails, parseAuthorizationDetails } from '../../src/as/authorization-details/authorization-details.js'
import { describeDetails } from '../../src/as/interaction/consented-details.js'
import { InvalidAuthorizationDetails } from '../../src/errors.js'

const PAYMENT = {
  type: 'object',
  required: ['type', 'instructedAmount'],
  properties: {
    type: { const: 'payment_initiation' },
    instructedAmount: {
      type: 'object',
      required: ['currency', 'amount'],
      properties: { currency: { type: 'string' }, amount: { type: 'string' } },
      additionalProperties: false,
    },
    creditorAccount: { type: 'object', properties: { iban: { type: 'string' } }, additionalProperties: false },
  },
  additionalProperties: false,
}
// A lax schema: what an operator may well write.
const LAX = { type: 'object', required: ['type'], properties: { type: { const: 'lax' } } }
const types = new AuthorizationDetailsTypes({ payment_initiation: PAYMENT, lax: LAX })
const ALLOWED = ['payment_initiation', 'lax']

const parse = (raw: string) => parseAuthorizationDetails(raw, types, ALLOWED)

t.test('a token request cannot widen by respelling, reordering or changing a nested value', async (t) => {
  const granted = parse('[{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"10.00"},"creditorAccount":{"iban":"DE02"}}]')
  // Same entry, other spelling: allowed (a narrowing to the same entry).
  const same = parse('[{"creditorAccount":{"iban":"DE\\u0030\\u0032"},"instructedAmount":{"amount":"10.00","currency":"EUR"},"type":"payment_initiation"}]')
  t.same(narrowAuthorizationDetails(same, granted), same, 'key order and escapes do not make a new entry')
  const widened: Array<[string, string]> = [
    ['another amount', '[{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"10.000"},"creditorAccount":{"iban":"DE02"}}]'],
    ['another nested account', '[{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"10.00"},"creditorAccount":{"iban":"DE03"}}]'],
    ['a member dropped', '[{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"10.00"}}]'],
    [
      'the entry twice plus another',
      '[{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"10.00"},"creditorAccount":{"iban":"DE02"}},{"type":"lax"}]',
    ],
  ]
  for (const [what, raw] of widened) {
    t.throws(() => narrowAuthorizationDetails(parse(raw), granted), InvalidAuthorizationDetails, `${what}: invalid_authorization_details`)
  }
})

t.test('type confusion and schema bypass attempts are refused before anything is stored', async (t) => {
  const refused: Array<[string, string]> = [
    ['type as an array', '[{"type":["payment_initiation"],"instructedAmount":{"currency":"EUR","amount":"1"}}]'],
    ['type with a trailing space', '[{"type":"payment_initiation ","instructedAmount":{"currency":"EUR","amount":"1"}}]'],
    ['type in another case', '[{"type":"Payment_Initiation","instructedAmount":{"currency":"EUR","amount":"1"}}]'],
    ['a number where the schema wants a string', '[{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":1e9}}]'],
    ['a member the schema does not know, nested', '[{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"1","limit":"none"}}]'],
    ['an object, not an array', '{"type":"lax"}'],
    ['nesting deeper than any canonical form', `[{"type":"lax","x":${'['.repeat(70)}${']'.repeat(70)}}]`],
    ['an integer beyond 2^53', '[{"type":"lax","n":9007199254740993}]'],
    ['a lone surrogate', '[{"type":"lax","s":"\\ud800"}]'],
    ['over 8 KiB', `[{"type":"lax","s":"${'a'.repeat(9000)}"}]`],
    ['seventeen entries', `[${Array(17).fill('{"type":"lax"}').join(',')}]`],
  ]
  for (const [what, raw] of refused) t.throws(() => parse(raw), InvalidAuthorizationDetails, `${what}: invalid_authorization_details`)
  // A repeated member: JSON.parse keeps the last, and that reading is the only one ever shown, stored or forwarded.
  const repeated = parse('[{"type":"payment_initiation","instructedAmount":{"currency":"EUR","amount":"1.00","amount":"9000.00"}}]')
  t.same(repeated[0]?.instructedAmount, { currency: 'EUR', amount: '9000.00' }, 'the entry is the value the consent page shows')
})

t.test('a __proto__ member in an entry is refused: an upstream that merges the forwarded entry would take it as the prototype', async (t) => {
  // The lax schema lets any member through; JSON.parse makes `__proto__` an own member, which the
  // token, introspection and the gateway's header would carry to the upstream as is.
  for (const raw of [
    '[{"type":"lax","__proto__":{"type":"payment_initiation","amount":"9000"}}]',
    '[{"type":"lax","x":{"__proto__":{"admin":true}}}]',
    '[{"type":"lax","\\u005f_proto__":{}}]',
  ]) {
    t.throws(() => parse(raw), InvalidAuthorizationDetails, `${raw}: invalid_authorization_details`)
  }
})

t.test('the consent page shows every entry whole: nothing past a length or a depth is approved unseen', async (t) => {
  // A lax type: the client puts what matters after 120 characters of a string, and seven levels down.
  const tail = `${'Invoice 2026-001 '.repeat(8)}and 9000 EUR to FR7630006000011234567890189`
  const deep = '{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"amount":"9000"}}}}}}}}'
  const [entries] = describeDetails(parse(`[{"type":"lax","memo":${JSON.stringify(tail)},"x":${deep}}]`)).map((d) => d.entries)
  const text = entries?.[0] ?? ''
  t.ok(text.includes('and 9000 EUR to FR7630006000011234567890189'), 'the end of a long string is on the page')
  t.ok(text.includes('"amount": "9000"'), 'the deepest member is on the page')
  t.notOk(text.includes('…'), 'nothing is cut or elided')
})
