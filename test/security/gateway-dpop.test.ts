/**
 * A stolen DPoP-bound token tried where a bearer token may travel outside the
 * Authorization header (docs/threat-model.md, Gateway: DPoP): RFC 9449 7.1
 * sends a DPoP-bound token with the DPoP scheme, so a route that also takes
 * `token_in_body` or `token_in_query` must not accept one there without its
 * proof (the config refuses those keys only beside `dpop: required`).
 */
import t from 'tap'
import { AT_HEADER, accessClaims, signEs256, startTarget, type Target } from '../helpers/attack.js'
import { proofKeyPair } from '../helpers/dpop.js'

let target: Target
t.before(async () => {
  target = await startTarget({
    routes: (upstream) => `
  - name: form
    match: { path: /form }
    upstream: ${upstream}
    token_in_body: true
    scopes: { "*": [orders:read] }
  - name: query
    match: { path: /query }
    upstream: ${upstream}
    token_in_query: true
    scopes: { "*": [orders:read] }
`,
  })
})
t.teardown(() => target.close())

t.test('a DPoP-bound token in a form body or the query, without its proof, is refused and nothing is forwarded', async (t) => {
  const key = proofKeyPair()
  const bearer = signEs256(target.key, AT_HEADER, accessClaims(target))
  const bound = signEs256(target.key, AT_HEADER, accessClaims(target, { cnf: { jkt: key.jkt } }))
  const form = { 'content-type': 'application/x-www-form-urlencoded' }
  // The control: the same routes take an unbound token from the body and the query.
  t.equal((await fetch(`${target.url}/form/x`, { method: 'POST', headers: form, body: `access_token=${bearer}` })).status, 200, 'an unbound token in the body')
  t.equal((await fetch(`${target.url}/query/x?access_token=${bearer}`)).status, 200, 'an unbound token in the query')

  const before = target.upstream.seen.length
  const tries: Array<[string, () => Promise<Response>]> = [
    ['Bearer header', () => fetch(`${target.url}/form/x`, { headers: { authorization: `Bearer ${bound}` } })],
    ['form body', () => fetch(`${target.url}/form/x`, { method: 'POST', headers: form, body: `note=hi&access_token=${bound}` })],
    ['query', () => fetch(`${target.url}/query/x?access_token=${bound}`)],
  ]
  for (const [where, send] of tries) {
    const res = await send()
    const body = (await res.json()) as { error?: string }
    t.equal(res.status, 401, `${where}: 401`)
    t.equal(body.error, 'invalid_token', `${where}: invalid_token`)
  }
  t.equal(target.upstream.seen.length, before, 'nothing reached the upstream')
})
