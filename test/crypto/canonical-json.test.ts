/** RFC 8785 canonical JSON (src/crypto/canonical-json.ts): what an approval and an authorization detail are bound to. */
import t from 'tap'
import { canonicalJson, MAX_DEPTH, NotCanonicalizable } from '../../src/crypto/canonical-json.js'

t.test('RFC 8785 3.2.2 and 3.2.3: members sorted by UTF-16 code units, numbers and strings as ECMAScript writes them', async (t) => {
  t.equal(canonicalJson(JSON.parse('{ "b": 1, "a": [true, null, "x"] }')), '{"a":[true,null,"x"],"b":1}')
  t.equal(canonicalJson(JSON.parse('[1, 1.0, 1e0, 10e-1, -0, 0.0]')), '[1,1,1,1,0,0]', 'one number, whatever its spelling')
  t.equal(canonicalJson(JSON.parse('"\\u0061\\u00e9\\n\\u001f"')), '"aé\\n\\u001f"', 'escapes only where ECMAScript does')
  t.equal(canonicalJson(123.456), '123.456')
  t.equal(canonicalJson(0.000001), '0.000001')
  t.equal(canonicalJson(1e-7), '1e-7')
  // RFC 8785 3.2.3's example: code-unit order puts U+1F600 (a surrogate pair) before U+FB33.
  t.equal(canonicalJson({ '\ufb33': 1, '\u{1f600}': 2, '\u20ac': 3, '\r': 4, '1': 5 }), '{"\\r":4,"1":5,"\u20ac":3,"\u{1f600}":2,"\ufb33":1}')
})

t.test('what has no single reading is refused', async (t) => {
  t.throws(() => canonicalJson(2 ** 53 + 2), NotCanonicalizable, 'an integer beyond 2^53')
  t.throws(() => canonicalJson(Number.POSITIVE_INFINITY), NotCanonicalizable)
  t.throws(() => canonicalJson(JSON.parse('"\\ud800"')), NotCanonicalizable, 'a lone high surrogate')
  t.throws(() => canonicalJson(JSON.parse('{"\\udc00": 1}')), NotCanonicalizable, 'a lone low surrogate in a name')
  let deep: unknown = 1
  for (let i = 0; i <= MAX_DEPTH; i++) deep = [deep]
  t.throws(() => canonicalJson(deep), NotCanonicalizable, 'nesting too deep')
  t.equal(canonicalJson(JSON.parse('"\\ud83d\\ude00"')), '"😀"', 'a surrogate pair is one character')
})
