/**
 * `token_endpoint_auth_method: private_key_jwt` in the config (RFC 7523 2.2):
 * a confidential client with its public keys (`jwks` or `jwks_uri`, exactly
 * one) and no secret. Every mistake is reported where it is, once.
 */
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const PUBLIC_JWK = { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', kid: 'k1' }

const client = (extra: string): string => `
authorization_server:
  clients:
    - client_id: c
      type: confidential
      grant_types: [client_credentials]
${extra
  .trim()
  .split('\n')
  .map((l) => `      ${l}`)
  .join('\n')}
`

t.test('a private_key_jwt client with inline keys or a jwks_uri, and no secret', async (t) => {
  const inline = inspect(client(`token_endpoint_auth_method: private_key_jwt\njwks: ${JSON.stringify({ keys: [PUBLIC_JWK] })}`))
  t.same(inline.problems, [], describe(inline.problems))
  const c = inline.config?.authorizationServer?.clients[0]
  t.equal(c?.tokenEndpointAuthMethod, 'private_key_jwt')
  t.equal(c?.secretHash, null)
  t.same(c?.jwks, { keys: [PUBLIC_JWK] })

  const remote = inspect(client('token_endpoint_auth_method: private_key_jwt\njwks_uri: https://keys.example.com/jwks'))
  t.same(remote.problems, [], describe(remote.problems))
  t.equal(remote.config?.authorizationServer?.clients[0]?.jwksUri, 'https://keys.example.com/jwks')
  t.equal(remote.config?.authorizationServer?.clients[0]?.jwks, undefined)
})

t.test('private_key_jwt mistakes', async (t) => {
  const cases: Array<[string, string, string | RegExp]> = [
    ['token_endpoint_auth_method: private_key_jwt', 'jwks', /needs its public keys.*exactly one/],
    [
      `token_endpoint_auth_method: private_key_jwt\njwks_uri: https://k.example.com/jwks\njwks: ${JSON.stringify({ keys: [PUBLIC_JWK] })}`,
      'jwks',
      /exactly one of the two/,
    ],
    [
      `token_endpoint_auth_method: private_key_jwt\njwks_uri: https://k.example.com/jwks\nsecret_hash: "${HASH}"`,
      'secret_hash',
      /not a secret: remove `secret_hash`/,
    ],
    ['token_endpoint_auth_method: private_key_jwt\njwks_uri: http://keys.example.com/jwks', 'jwks_uri', /http only on a loopback host/],
    ['token_endpoint_auth_method: private_key_jwt\njwks_uri: "https://u:p@k.example.com/jwks"', 'jwks_uri', /no credentials or fragment/],
    [`token_endpoint_auth_method: private_key_jwt\njwks: ${JSON.stringify({ keys: [{ ...PUBLIC_JWK, d: 'secret-part' }] })}`, 'jwks', /public keys only/],
    [`token_endpoint_auth_method: private_key_jwt\njwks: ${JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] })}`, 'jwks', /public keys only/],
    ['token_endpoint_auth_method: private_key_jwt\njwks: { keys: [] }', 'jwks', /non-empty `keys`/],
    [
      `token_endpoint_auth_method: private_key_jwt\njwks: ${JSON.stringify({ keys: [{ ...PUBLIC_JWK, use: 'enc' }] })}`,
      'jwks',
      /no usable public signature key/,
    ],
    [`secret_hash: "${HASH}"\njwks_uri: https://k.example.com/jwks`, 'jwks_uri', /for `token_endpoint_auth_method: private_key_jwt` clients/],
  ]
  for (const [body, key, message] of cases) {
    const { problems } = inspect(client(body))
    t.match(at(problems, `authorization_server.clients[0].${key}`), [{ message }], `${key}: ${describe(problems)}`)
    t.equal(problems.length, 1, `exactly one problem for ${JSON.stringify(body)}: ${describe(problems)}`)
  }
  const pub = inspect(`
authorization_server:
  clients:
    - { client_id: p, type: public, redirect_uris: [http://127.0.0.1/cb], token_endpoint_auth_method: private_key_jwt, jwks_uri: https://k.example.com/jwks }
`)
  t.ok(pub.problems.length > 0, 'a public client cannot use private_key_jwt')
  t.ok(
    pub.problems.some((p) => /public clients use `none`/.test(p.message)),
    describe(pub.problems),
  )
})

t.test('token_exchange policy (RFC 8693): with its grant, and only then', async (t) => {
  const ok = inspect(
    client(`secret_hash: "${HASH}"\ngrant_types: [token-exchange]\ntoken_exchange: { audiences: [https://api.example.com] }`).replace(
      '      grant_types: [client_credentials]\n',
      '',
    ),
  )
  t.same(ok.problems, [], describe(ok.problems))
  t.same(
    ok.config?.authorizationServer?.clients[0]?.tokenExchange,
    { audiences: ['https://api.example.com'], refreshTokens: false },
    'no refresh tokens by default',
  )
  t.same(ok.config?.authorizationServer?.clients[0]?.grantTypes, ['urn:ietf:params:oauth:grant-type:token-exchange'])
  const noPolicy = inspect(client(`secret_hash: "${HASH}"\ngrant_types: [token-exchange]`).replace('      grant_types: [client_credentials]\n', ''))
  t.match(
    at(noPolicy.problems, 'authorization_server.clients[0].token_exchange'),
    [{ message: /needs `token_exchange: \{ audiences/ }],
    describe(noPolicy.problems),
  )
  const noGrant = inspect(client(`secret_hash: "${HASH}"\ntoken_exchange: { audiences: [https://api.example.com] }`))
  t.match(
    at(noGrant.problems, 'authorization_server.clients[0].token_exchange'),
    [{ message: /needs `token-exchange` in `grant_types`/ }],
    describe(noGrant.problems),
  )
  const empty = inspect(
    client(`secret_hash: "${HASH}"\ngrant_types: [token-exchange]\ntoken_exchange: { audiences: [] }`).replace('      grant_types: [client_credentials]\n', ''),
  )
  t.ok(at(empty.problems, 'authorization_server.clients[0].token_exchange.audiences').length > 0, describe(empty.problems))

  const refreshing = inspect(
    client(
      `secret_hash: "${HASH}"\ngrant_types: [token-exchange, refresh_token]\ntoken_exchange: { audiences: [https://api.example.com], refresh_tokens: true }`,
    ).replace('      grant_types: [client_credentials]\n', ''),
  )
  t.same(refreshing.problems, [], describe(refreshing.problems))
  t.same(refreshing.config?.authorizationServer?.clients[0]?.tokenExchange, { audiences: ['https://api.example.com'], refreshTokens: true })
  const cannotRedeem = inspect(
    client(`secret_hash: "${HASH}"\ngrant_types: [token-exchange]\ntoken_exchange: { audiences: [https://api.example.com], refresh_tokens: true }`).replace(
      '      grant_types: [client_credentials]\n',
      '',
    ),
  )
  t.match(
    at(cannotRedeem.problems, 'authorization_server.clients[0].token_exchange.refresh_tokens'),
    [{ message: /needs `refresh_token` in `grant_types`/ }],
    describe(cannotRedeem.problems),
  )
})
