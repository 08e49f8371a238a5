import t from 'tap'
import { substituteEnv } from '../../src/config/env.js'
import { at, describe, HASH, inspect } from './helpers.js'

t.test('substituteEnv: references, defaults, escapes', async (t) => {
  const env = { HOST: 'db', PORT: '6379', EMPTY: '' }
  t.same(substituteEnv('redis://${HOST}:${PORT}/0', env), { value: 'redis://db:6379/0', replaced: true, problems: [] })
  t.same(substituteEnv('${MISSING:-fallback}', env).value, 'fallback')
  t.same(substituteEnv('${EMPTY:-fallback}', env).value, 'fallback', 'an empty variable takes the default, as in sh')
  t.same(substituteEnv('[${EMPTY}]', env).value, '[]', 'an empty variable without default is empty')
  t.same(substituteEnv('${MISSING:-}', env).value, '', 'an empty default')
  t.same(substituteEnv('${HOST:-unused}', env).value, 'db')
  t.same(substituteEnv('$${HOST} costs $5', env), { value: '${HOST} costs $5', replaced: false, problems: [] })
  t.same(substituteEnv('no refs', env), { value: 'no refs', replaced: false, problems: [] })
  t.same(substituteEnv('${A:-x:-y}', {}).value, 'x:-y', 'only the first :- separates the default')
})

t.test('substituteEnv: every problem, with its offset', async (t) => {
  const { problems } = substituteEnv('a ${NOPE} b ${bad-name} c ${OPEN', {})
  t.same(
    problems.map((p) => p.index),
    [2, 12, 26],
  )
  t.match(problems[0]?.message, 'environment variable NOPE is not set')
  t.match(problems[1]?.message, 'is not a valid reference')
  t.match(problems[2]?.message, 'is not closed')
})

t.test('config values read the environment per scalar', async (t) => {
  const yaml = [
    'listen: "${HOST:-0.0.0.0}:${PORT}"',
    'public_url: https://${DOMAIN}/',
    'store: ${STORE_URL:-memory}',
    'shutdown_timeout: ${GRACE:-5s}',
    'request_id:',
    '  trust_incoming: ${TRUST_ID}',
    'gateway:',
    '  token_cache:',
    '    max_entries: ${CACHE}',
    'issuers:',
    '  - id: corp',
    '    issuer: https://idp.example.com',
    '    introspection:',
    '      endpoint: https://idp.example.com/introspect',
    '      client_id: gw',
    '      client_secret: ${SECRET}',
    'routes:',
    '  - name: api',
    '    match: { path: /api }',
    '    upstream: http://127.0.0.1:3000',
    '    token: introspect',
    '    issuers: [corp]',
    '    public: ${PUBLIC:-false}',
  ].join('\n')
  const { config, problems } = inspect(yaml, { PORT: '9000', DOMAIN: 'auth.example.com', TRUST_ID: 'true', CACHE: '42', SECRET: '12345' })
  t.same(problems, [], describe(problems))
  t.match(config, {
    listen: { host: '0.0.0.0', port: 9000 },
    publicUrl: 'https://auth.example.com',
    store: { kind: 'memory' },
    shutdownTimeoutMs: 5000,
    trustIncomingRequestId: true,
    gateway: { tokenCacheMaxEntries: 42 },
    routes: [{ public: false }],
  })
  t.equal(config?.issuers[0]?.introspection?.clientSecret, '12345', 'a numeric-looking secret stays a string')
})

t.test('a bare port from the environment', async (t) => {
  const { config } = inspect('listen: ${PORT}\nadmin_listen: ${ADMIN:-false}\n', { PORT: '8081' })
  t.same(config?.listen, { host: '0.0.0.0', port: 8081 })
  t.equal(config?.adminListen, null, '`${ADMIN:-false}` turns the admin listener off')
})

t.test('a missing variable is a problem positioned at its reference', async (t) => {
  const yaml = [
    'public_url: "https://${DOMAIN}"', //                          ${ at col 22
    'authorization_server:',
    '  users:',
    '    - username: ${ADMIN_USER:-admin}',
    '      password_hash: ${ADMIN_HASH}', //                       col 22
    'issuers:',
    '  - id: corp',
    '    issuer: https://idp.example.com',
    '    introspection: { endpoint: "https://idp/${PATH_A}/${PATH_B}", client_id: gw, client_secret: x }',
  ].join('\n')
  const { config, problems } = inspect(yaml, {})
  t.equal(config, null)
  t.match(at(problems, 'public_url'), [{ line: 1, col: 22, message: 'environment variable DOMAIN is not set; set it or give a default: `${DOMAIN:-value}`' }])
  t.match(at(problems, 'authorization_server.users[0].password_hash'), [{ line: 5, col: 22, message: /ADMIN_HASH is not set/ }])
  t.match(at(problems, 'issuers[0].introspection.endpoint'), [
    { line: 9, col: 45, message: /PATH_A is not set/ },
    { line: 9, col: 55, message: /PATH_B is not set/ },
  ])
  t.equal(problems.length, 4, describe(problems))
})

t.test('a value from the environment is validated like a literal one', async (t) => {
  const { problems } = inspect(`authorization_server:\n  code_ttl: \${TTL}\n  users:\n    - { username: u, password_hash: "${HASH}" }\n`, { TTL: '1h' })
  t.match(at(problems, 'authorization_server.code_ttl'), [{ line: 2, col: 13, message: 'must be at most 10m, got `1h`' }])
})

t.test('$${ is a literal ${ and is not looked up', async (t) => {
  const { config, problems } = inspect('gateway:\n  realm: "cost $${HOME}"\n', {})
  t.same(problems, [])
  t.equal(config?.gateway.realm, 'cost ${HOME}')
})

t.test('substitution never injects YAML structure', async (t) => {
  const { config } = inspect('gateway:\n  realm: ${REALM}\n', { REALM: 'a: b\nc: [d]' })
  t.equal(config, null, 'the value is one string (and this one is refused as a realm)')
  const ok = inspect('gateway:\n  realm: ${REALM}\n', { REALM: 'a: [b]' })
  t.equal(ok.config?.gateway.realm, 'a: [b]')
})

t.test('an aliased value with a missing variable is reported once', async (t) => {
  const yaml = 'x-host: &host "${API_HOST}"\nissuers:\n  - { id: a, issuer: *host, jwks_uri: *host }\n'
  const { problems } = inspect(yaml, {})
  t.equal(problems.filter((p) => /API_HOST/.test(p.message)).length, 1, describe(problems))
})
