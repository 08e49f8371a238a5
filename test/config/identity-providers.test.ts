import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const provider = (extra = ''): string => `
    - id: corp
      name: Corp SSO
      issuer: https://sso.example.com
      client_id: bearward${extra}`

t.test("a local user in a provider's sub namespace is refused, at the user", async (t) => {
  const { problems } = inspect(`
authorization_server:
  identity_providers:${provider()}
  users:
    - username: alice
      password_hash: "${HASH}"
    - username: mallory
      sub: "corp:ann"
      password_hash: "${HASH}"
`)
  t.equal(at(problems, 'authorization_server.users[0]').length, 0, describe(problems))
  t.match(at(problems, 'authorization_server.users[1]'), [{ message: /may not start with `corp:`/ }])
})

t.test('local_login: false needs a provider', async (t) => {
  const { problems } = inspect('authorization_server:\n  local_login: false\n')
  t.match(at(problems, 'authorization_server.local_login'), [{ line: 2, message: /none is configured/ }])
  const ok = inspect(`authorization_server:\n  local_login: false\n  identity_providers:${provider()}\n`)
  t.same(ok.problems, [], describe(ok.problems))
})

t.test('issuers: https, or http on loopback only; no query', async (t) => {
  for (const [issuer, ok] of [
    ['https://sso.example.com/realms/x', true],
    ['http://127.0.0.1:4444', true],
    ['http://localhost:4444/oidc', true],
    ['http://[::1]:4444', true],
    ['http://sso.example.com', false],
    ['http://10.0.0.1', false],
    ['https://sso.example.com/?tenant=a', false],
    ['ftp://sso.example.com', false],
  ] as const) {
    const { problems } = inspect(`authorization_server:\n  identity_providers:\n    - { id: p, name: P, issuer: "${issuer}", client_id: c }\n`)
    t.equal(at(problems, 'authorization_server.identity_providers[0].issuer').length === 0, ok, `${issuer}: ${describe(problems)}`)
  }
})

t.test('duplicate ids, missing keys and bad allowed rules are positioned', async (t) => {
  const { problems } = inspect(`
authorization_server:
  identity_providers:${provider()}${provider()}
    - id: other
      issuer: https://x.example.com
      client_id: c
      allowed: {}
    - id: third
      name: Third
      issuer: https://y.example.com
      client_id: c
      allowed: { email_domains: ["@example.com"] }
`)
  t.match(at(problems, 'authorization_server.identity_providers[1].id'), [{ message: /duplicate|already/ }], describe(problems))
  t.match(at(problems, 'authorization_server.identity_providers[2].name'), [{ message: /missing required key `name`/ }])
  t.match(at(problems, 'authorization_server.identity_providers[2].allowed'), [{ message: /omit `allowed` to let everyone in/ }])
  t.match(at(problems, 'authorization_server.identity_providers[3].allowed.email_domains[0]'), [{ message: /without `@`/ }])
})

t.test("acr_values maps a provider's acr to one of ours, and only to ours", async (t) => {
  const ok = inspect(
    `authorization_server:\n  identity_providers:${provider('\n      acr_values: { "urn:corp:loa:2": mfa, "corp-key": phr, __proto__: pwd }')}\n`,
  )
  t.same(ok.problems, [], describe(ok.problems))
  const acrValues = ok.config?.authorizationServer?.identityProviders[0]?.acrValues
  t.same(
    Object.entries(acrValues ?? {}),
    [
      ['urn:corp:loa:2', 'mfa'],
      ['corp-key', 'phr'],
      ['__proto__', 'pwd'],
    ],
    'every key kept, __proto__ as a plain key',
  )
  t.equal(Object.getPrototypeOf(acrValues), null, 'a map without a prototype')
  const bad = inspect(`authorization_server:\n  identity_providers:${provider('\n      acr_values: { "urn:corp:loa:2": gold, "a\\"b": mfa }')}\n`)
  t.match(at(bad.problems, 'authorization_server.identity_providers[0].acr_values.urn:corp:loa:2'), [
    { message: /one of bearward's acr values: pwd, mfa, phr/ },
  ])
  t.ok(
    bad.problems.some((p) => /is not an acr value/.test(p.message)),
    describe(bad.problems),
  )
})
