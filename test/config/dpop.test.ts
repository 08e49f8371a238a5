/** `dpop` (top level), `routes[].dpop` and `clients[].dpop_bound_access_tokens`: what a person gets told. */
import t from 'tap'
import { at, describe, inspect } from './helpers.js'

const ROUTE = `
routes:
  - name: api
    match: { path: /api }
    upstream: http://127.0.0.1:3000
    issuers: [self]
`

t.test('proof algorithms: none and HMAC are refused with the reason, typos get a suggestion', async (t) => {
  const { problems } = inspect(`authorization_server: {}\ndpop: { algs: [ES256, none, HS256, ES265] }\n${ROUTE}`)
  t.match(at(problems, 'dpop.algs[1]'), [{ message: /`none` is never accepted/ }])
  t.match(at(problems, 'dpop.algs[2]'), [{ message: /HMAC is never accepted/ }])
  t.match(at(problems, 'dpop.algs[3]'), [{ message: /did you mean `ES256`/ }])
  const empty = inspect(`authorization_server: {}\ndpop: { algs: [] }\n${ROUTE}`)
  t.equal(at(empty.problems, 'dpop.algs').length, 1, 'an empty list is refused')
})

t.test('windows are bounded and nonce secrets must be long', async (t) => {
  const { problems } = inspect(`authorization_server: {}\ndpop: { iat_window: 1h, iat_leeway: 5m, nonce: { secret: short } }\n${ROUTE}`)
  t.match(at(problems, 'dpop.iat_window'), [{ message: /at most/ }])
  t.match(at(problems, 'dpop.iat_leeway'), [{ message: /at most/ }])
  t.match(at(problems, 'dpop.nonce.secret'), [{ message: /at least 32 characters/ }])
  const missing = inspect(`authorization_server: {}\ndpop: { nonce: { ttl: 1m } }\n${ROUTE}`)
  t.match(at(missing.problems, 'dpop.nonce.secret'), [{ message: /missing required key/ }])
  const off = inspect(`authorization_server: {}\ndpop: { nonce: null }\n${ROUTE}`)
  t.same(off.problems, [], describe(off.problems))
  t.equal(off.config?.dpop.nonce, null, 'null: nonces off')
  const env = inspect(`authorization_server: {}\ndpop: { nonce: { secret: "\${DPOP_NONCE_SECRET}" } }\n${ROUTE}`, { DPOP_NONCE_SECRET: 'n'.repeat(40) })
  t.same(env.config?.dpop.nonce, { secret: 'n'.repeat(40), ttlSec: 300 }, 'the secret from the environment, ttl defaults to 5m')
})

t.test('routes: dpop is allowed or required; required refuses tokens outside the header; public routes take none', async (t) => {
  const { problems } = inspect(`
authorization_server: {}
routes:
  - { name: a, match: { path: /a }, upstream: "http://127.0.0.1:1", dpop: always }
  - { name: b, match: { path: /b }, upstream: "http://127.0.0.1:1", dpop: required, token_in_query: true }
  - { name: c, match: { path: /c }, upstream: "http://127.0.0.1:1", dpop: required, public: true }
  - { name: d, match: { path: /d }, upstream: "http://127.0.0.1:1", dpop: required }
`)
  t.match(at(problems, 'routes[0].dpop'), [{ message: /not a DPoP mode: expected one of `allowed`, `required`/ }])
  t.match(at(problems, 'routes[1].dpop'), [{ message: /Authorization header only/ }])
  t.match(at(problems, 'routes[2].dpop'), [{ message: /no effect on a public route/ }])
  t.equal(at(problems, 'routes[3].dpop').length, 0)
})

t.test('clients: dpop_bound_access_tokens is a boolean', async (t) => {
  const { problems } = inspect(`
authorization_server:
  clients:
    - { client_id: tv, type: public, grant_types: [device_code], dpop_bound_access_tokens: yes please }
`)
  t.match(at(problems, 'authorization_server.clients[0].dpop_bound_access_tokens'), [{ message: /expected/ }])
})
