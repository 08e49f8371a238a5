/**
 * `profile: fapi2` (per client) and `authorization_server.profile: fapi2`
 * (every client): what the profile implies is set, and each setting that
 * contradicts it is one problem where it is written, naming the rule.
 */
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const PUBLIC_JWK = { kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', kid: 'k1' }
const KEYED = `token_endpoint_auth_method: private_key_jwt, jwks: ${JSON.stringify({ keys: [PUBLIC_JWK] })}`
const FAPI = `${KEYED}, dpop_bound_access_tokens: true`

const config = (server: string, client: string): string => `
authorization_server:
${server}
  clients:
    - { client_id: c, type: confidential, redirect_uris: [https://app.example.com/cb], ${client} }
`

t.test('a FAPI 2.0 client: PAR, PKCE and its profile set; the server-wide profile makes every client one and PAR required', async (t) => {
  const own = inspect(config('', `profile: fapi2, ${FAPI}`))
  t.same(own.problems, [], describe(own.problems))
  const client = own.config?.authorizationServer?.clients[0]
  t.equal(client?.profile, 'fapi2')
  t.equal(client?.requirePushedAuthorizationRequests, true, 'PAR required')
  t.equal(client?.requirePkce, true)
  t.equal(client?.allowPlainPkce, false)
  t.equal(own.config?.authorizationServer?.profile, null, 'no server-wide profile')
  t.equal(own.config?.authorizationServer?.par.required, false, 'the other clients need not push')

  const server = inspect(config('  profile: fapi2', FAPI))
  t.same(server.problems, [], describe(server.problems))
  t.equal(server.config?.authorizationServer?.profile, 'fapi2')
  t.equal(server.config?.authorizationServer?.par.required, true)
  t.equal(server.config?.authorizationServer?.clients[0]?.profile, 'fapi2')

  const plain = inspect(config('', `secret_hash: "${HASH}"`))
  t.equal(plain.config?.authorizationServer?.clients[0]?.profile, undefined, 'no profile unless asked')
})

t.test('profile: fapi2 with a contradicting client setting: one problem there, naming the rule', async (t) => {
  const cases: Array<[string, string, string, RegExp]> = [
    [
      '',
      `profile: fapi2, secret_hash: "${HASH}", token_endpoint_auth_method: client_secret_basic, dpop_bound_access_tokens: true`,
      'token_endpoint_auth_method',
      /`profile: fapi2` authenticates clients with `private_key_jwt`, `tls_client_auth` or `self_signed_tls_client_auth` only, not `client_secret_basic` \(FAPI 2.0 Security Profile 5.3.2.1\)/,
    ],
    ['', `profile: fapi2, secret_hash: "${HASH}", dpop_bound_access_tokens: true`, 'token_endpoint_auth_method', /not the default `client_secret_basic`/],
    [
      '',
      `profile: fapi2, secret_hash: "${HASH}", token_endpoint_auth_method: client_secret_post, dpop_bound_access_tokens: true`,
      'token_endpoint_auth_method',
      /not `client_secret_post`/,
    ],
    [
      '',
      `profile: fapi2, ${KEYED}`,
      'dpop_bound_access_tokens',
      /issues sender-constrained tokens only: set `dpop_bound_access_tokens: true`.*`tls_client_certificate_bound_access_tokens: true`/,
    ],
    ['', `profile: fapi2, ${FAPI}, require_pkce: false`, 'require_pkce', /requires PKCE.*5.3.2.2/],
    ['', `profile: fapi2, ${FAPI}, allow_plain_pkce: true`, 'allow_plain_pkce', /S256 only/],
    [
      '',
      `profile: fapi2, ${FAPI}, require_pushed_authorization_requests: false`,
      'require_pushed_authorization_requests',
      /requires pushed authorization requests/,
    ],
    ['', `profile: fapi3, ${FAPI}`, 'profile', /`fapi3` is not a security profile: expected one of `fapi2`/],
    [
      '  profile: fapi2',
      `secret_hash: "${HASH}", dpop_bound_access_tokens: true`,
      'token_endpoint_auth_method',
      /`authorization_server.profile: fapi2` authenticates clients/,
    ],
  ]
  for (const [server, client, key, message] of cases) {
    const { problems } = inspect(config(server, client))
    const path = `authorization_server.clients[0].${key}`
    t.match(at(problems, path), [{ message }], `${path}: ${describe(problems)}`)
    t.equal(problems.length, 1, `exactly one problem for ${client}: ${describe(problems)}`)
    t.ok(problems[0] !== undefined && problems[0].line > 0 && problems[0].col > 0, 'with its line and column')
  }
})

t.test('a public client under profile: fapi2 is refused, as under the server-wide profile', async (t) => {
  const yaml = (server: string, own: string) => `
authorization_server:
${server}
  clients:
    - { client_id: p, type: public, redirect_uris: [https://app.example.com/cb], dpop_bound_access_tokens: true${own} }
`
  for (const [server, own, source] of [
    ['', ', profile: fapi2', '`profile: fapi2`'],
    ['  profile: fapi2', '', '`authorization_server.profile: fapi2`'],
  ] as const) {
    const { problems } = inspect(yaml(server, own))
    t.match(at(problems, 'authorization_server.clients[0].type'), [{ message: `${source} takes confidential clients only` }], describe(problems))
    t.equal(problems.length, 1, describe(problems))
  }
})

t.test('authorization_server.profile: fapi2 with a server setting it cannot keep: one problem there', async (t) => {
  const client = `${FAPI}`
  const cases: Array<[string, string, RegExp]> = [
    ['  profile: fapi2\n  code_ttl: 2m', 'authorization_server.code_ttl', /lets an authorization code live at most 60s \(FAPI 2.0 Security Profile 5.3.2.2\)/],
    ['  profile: fapi2\n  par: { required: false }', 'authorization_server.par.required', /requires pushed authorization requests/],
    ['  profile: fapi2\n  registration: { enabled: true }', 'authorization_server.registration', /self-registered clients are public: turn `registration` off/],
    [
      '  profile: fapi2\n  client_id_metadata_documents: { enabled: true, allow_hosts: [clients.example.com] }',
      'authorization_server.client_id_metadata_documents',
      /turn `client_id_metadata_documents` off/,
    ],
  ]
  for (const [server, path, message] of cases) {
    const { problems } = inspect(config(server, client))
    t.match(at(problems, path), [{ message }], `${path}: ${describe(problems)}`)
    t.equal(problems.length, 1, `exactly one problem for ${server}: ${describe(problems)}`)
  }
  const ok = inspect(config('  profile: fapi2\n  code_ttl: 30s\n  par: { required: true }', client))
  t.same(ok.problems, [], describe(ok.problems))
})

t.test('a FAPI client a workload issuer maps a subject to is refused: its token follows the issuer, not the profile', async (t) => {
  const { problems } = inspect(`
public_url: https://auth.example.com
authorization_server:
  assertion_issuers:
    - { issuer: https://kubernetes.default.svc, kind: workload, jwks: ${JSON.stringify({ keys: [PUBLIC_JWK] })}, audience: bearward, algorithms: [ES256], subjects: { "system:serviceaccount:ns:sa": billing } }
  clients:
    - { client_id: billing, type: confidential, token_endpoint_auth_method: private_key_jwt, grant_types: [client_credentials], profile: fapi2, dpop_bound_access_tokens: true }
`)
  t.match(
    at(problems, 'authorization_server.clients[0].client_id'),
    [{ message: /`profile: fapi2` accepts client assertions whose `aud` is the issuer only/ }],
    describe(problems),
  )
  t.equal(problems.length, 1, describe(problems))
})
