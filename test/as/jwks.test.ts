import t from 'tap'
import { KeySet, generatePrivateJwk, signingKeyFromJwk } from '../../src/keys/keyset.js'
import { jwksDocument } from '../../src/as/jwks.js'
import { send, startAs } from '../helpers/as-back.js'

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth']

for (const alg of ['ES256', 'RS256', 'EdDSA'] as const) {
  t.test(`GET /jwks.json (${alg})`, async (t) => {
    const h = await startAs({ alg })
    t.teardown(() => h.close())
    const r = await send(`${h.url}/jwks.json`)
    t.equal(r.status, 200)
    t.equal(r.headers.get('cache-control'), 'public, max-age=300')
    t.equal(r.headers.get('access-control-allow-origin'), '*')
    const keys = (r.json?.keys ?? []) as Record<string, unknown>[]
    t.equal(keys.length, 1)
    const key = keys[0] ?? {}
    t.equal(key.kid, h.as.keys.signing.kid)
    t.equal(key.alg, alg)
    t.equal(key.use, 'sig')
    for (const m of PRIVATE_MEMBERS) t.notOk(m in key, `no private member ${m}`)
    t.notOk(/"(d|p|q|dp|dq|qi|k)":/.test(r.text), 'not anywhere in the document')
  })
}

t.test('every configured key is published, private parts stripped even if a JWK kept them', async (t) => {
  const a = await signingKeyFromJwk(await generatePrivateJwk('ES256', 'a'))
  const bJwk = await generatePrivateJwk('RS256', 'b')
  const b = await signingKeyFromJwk(bJwk)
  // A key whose publicJwk was (wrongly) built from the private JWK.
  const leaky = { ...b, publicJwk: { ...bJwk } }
  const doc = jwksDocument({ keys: new KeySet([a, leaky], false) } as Parameters<typeof jwksDocument>[0])
  t.same(
    doc.keys.map((k) => k.kid),
    ['a', 'b'],
  )
  for (const k of doc.keys) for (const m of PRIVATE_MEMBERS) t.notOk(m in k, `${String(k.kid)}: ${m}`)
})
