/**
 * `authorization_server.par` (RFC 9126) and the clients'
 * `require_pushed_authorization_requests` / `require_signed_request_object`
 * (RFC 9126 6, RFC 9101 10.5): read with their defaults, and every mistake
 * reported where it is, once.
 */
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const PUBLIC_JWK = { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', kid: 'k1' }
const KEYED = `token_endpoint_auth_method: private_key_jwt, jwks: ${JSON.stringify({ keys: [PUBLIC_JWK] })}`

const config = (par: string, client: string): string => `
authorization_server:
${par}
  clients:
    - { client_id: c, type: confidential, redirect_uris: [https://app.example.com/cb], ${client} }
`

t.test('par and the client keys, with their defaults', async (t) => {
  const plain = inspect(config('', `secret_hash: "${HASH}"`))
  t.same(plain.problems, [], describe(plain.problems))
  t.same(plain.config?.authorizationServer?.par, { required: false, requestUriTtlSec: 60 })
  t.equal(plain.config?.authorizationServer?.clients[0]?.requirePushedAuthorizationRequests, undefined)
  t.equal(plain.config?.authorizationServer?.clients[0]?.requireSignedRequestObject, undefined)

  const strict = inspect(
    config('  par: { required: true, request_uri_ttl: 2m }', `${KEYED}, require_pushed_authorization_requests: true, require_signed_request_object: true`),
  )
  t.same(strict.problems, [], describe(strict.problems))
  t.same(strict.config?.authorizationServer?.par, { required: true, requestUriTtlSec: 120 })
  t.equal(strict.config?.authorizationServer?.clients[0]?.requirePushedAuthorizationRequests, true)
  t.equal(strict.config?.authorizationServer?.clients[0]?.requireSignedRequestObject, true)
})

t.test('par and request object mistakes', async (t) => {
  const cases: Array<[string, string, string, RegExp]> = [
    ['  par: { request_uri_ttl: 1s }', `secret_hash: "${HASH}"`, 'authorization_server.par.request_uri_ttl', /at least/],
    ['  par: { request_uri_ttl: 1h }', `secret_hash: "${HASH}"`, 'authorization_server.par.request_uri_ttl', /at most/],
    ['  par: { required: maybe }', `secret_hash: "${HASH}"`, 'authorization_server.par.required', /`true` or `false`/],
    ['  par: { require: true }', `secret_hash: "${HASH}"`, 'authorization_server.par.require', /required/],
    [
      '',
      `secret_hash: "${HASH}", require_signed_request_object: true`,
      'authorization_server.clients[0].require_signed_request_object',
      /needs `token_endpoint_auth_method: private_key_jwt`/,
    ],
    [
      '',
      `${KEYED}, grant_types: [client_credentials], require_pushed_authorization_requests: true`,
      'authorization_server.clients[0].require_pushed_authorization_requests',
      /needs the `authorization_code` grant/,
    ],
  ]
  for (const [par, client, path, message] of cases) {
    const { problems } = inspect(config(par, client))
    t.match(at(problems, path), [{ message }], `${path}: ${describe(problems)}`)
    t.equal(problems.length, 1, `exactly one problem for ${par} ${client}: ${describe(problems)}`)
  }
})
