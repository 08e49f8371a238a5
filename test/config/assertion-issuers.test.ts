/**
 * `authorization_server.assertion_issuers` (RFC 7523 assertions of other
 * issuers): the shapes of both kinds, their defaults, and every mistake
 * reported where it is.
 */
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const JWK = { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', kid: 'k1' }
const JWKS = JSON.stringify({ keys: [JWK] })

const config = (issuers: string, clients = ''): string => `
public_url: https://auth.example.com
authorization_server:
  assertion_issuers:
${issuers}
  clients:
    - { client_id: billing, type: confidential, token_endpoint_auth_method: private_key_jwt, grant_types: [client_credentials] }
    - { client_id: agent, type: confidential, secret_hash: "${HASH}", grant_types: [jwt-bearer] }
${clients}
`

t.test('an id-jag and a workload issuer, with their defaults', async (t) => {
  const { config: c, problems } = inspect(
    config(`    - { issuer: https://idp.example.com, kind: id-jag, jwks_uri: https://idp.example.com/jwks, person: { claim: email } }
    - { issuer: https://kubernetes.default.svc, kind: workload, jwks: ${JWKS}, audience: bearward, algorithms: [ES256], subjects: { "system:serviceaccount:ns:sa": billing } }`),
  )
  t.same(problems, [], describe(problems))
  const [jag, workload] = c?.authorizationServer?.assertionIssuers ?? []
  t.match(jag, {
    issuer: 'https://idp.example.com',
    kind: 'id-jag',
    jwksUri: 'https://idp.example.com/jwks',
    jwks: null,
    audience: 'https://auth.example.com',
    personClaim: 'email',
  })
  t.ok((jag?.algorithms ?? []).includes('RS256') && !(jag?.algorithms ?? []).some((a) => a.startsWith('HS')), 'asymmetric algorithms by default')
  t.match(workload, { kind: 'workload', jwksUri: null, audience: 'bearward', algorithms: ['ES256'], subjects: { 'system:serviceaccount:ns:sa': 'billing' } })
  t.same(c?.authorizationServer?.clients.find((x) => x.clientId === 'agent')?.grantTypes, ['urn:ietf:params:oauth:grant-type:jwt-bearer'])
  t.equal(c?.authorizationServer?.clients.find((x) => x.clientId === 'billing')?.jwks, undefined, 'a workload client needs no keys of its own')
})

t.test('assertion issuer mistakes', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['    - { issuer: https://idp.example.com, kind: id-jag }', 'jwks_uri', /exactly one of the two/],
    ['    - { issuer: ftp://idp.example.com, kind: id-jag, jwks_uri: https://idp.example.com/jwks }', 'issuer', /https/],
    ['    - { issuer: https://idp.example.com, kind: robot, jwks_uri: https://idp.example.com/jwks }', 'kind', /not an assertion issuer kind/],
    ['    - { issuer: https://idp.example.com, kind: id-jag, jwks_uri: https://idp.example.com/jwks, algorithms: [HS256] }', 'algorithms[0]', /asymmetric/],
    [`    - { issuer: https://k.example.com, kind: workload, jwks: ${JWKS} }`, 'subjects', /maps the subjects/],
    [`    - { issuer: https://k.example.com, kind: workload, jwks: ${JWKS}, subjects: { "sa": nobody } }`, 'subjects["sa"]', /no client has this id/],
    [
      `    - { issuer: https://k.example.com, kind: workload, jwks: ${JWKS}, subjects: { "sa": agent } }`,
      'subjects["sa"]',
      /not a `token_endpoint_auth_method: private_key_jwt` client/,
    ],
    [`    - { issuer: https://idp.example.com, kind: id-jag, jwks: ${JWKS}, subjects: { "sa": billing } }`, 'subjects', /is for `kind: workload`/],
    [`    - { issuer: https://idp.example.com, kind: id-jag, jwks: ${JSON.stringify({ keys: [{ ...JWK, d: 'x' }] })} }`, 'jwks', /public keys only/],
  ]
  for (const [issuers, key, message] of cases) {
    const { problems } = inspect(config(issuers))
    t.match(at(problems, `authorization_server.assertion_issuers[0].${key}`), [{ message }], `${key}: ${describe(problems)}`)
  }
  const unmapped = inspect(
    config(
      '    - { issuer: https://idp.example.com, kind: id-jag, jwks_uri: https://idp.example.com/jwks }',
      '    - { client_id: lonely, type: confidential, token_endpoint_auth_method: private_key_jwt }',
    ),
  )
  t.match(
    at(unmapped.problems, 'authorization_server.clients[2].jwks'),
    [{ message: /needs its public keys/ }],
    'a private_key_jwt client no workload vouches for needs keys',
  )
  const twice = inspect(
    config(`    - { issuer: https://idp.example.com, kind: id-jag, jwks_uri: https://idp.example.com/jwks }
    - { issuer: https://idp.example.com, kind: id-jag, jwks_uri: https://idp.example.com/jwks }`),
  )
  t.ok(
    twice.problems.some((p) => /idp\.example\.com/.test(p.message) && p.path.includes('assertion_issuers[1]')),
    describe(twice.problems),
  )
})
