import t from 'tap'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { checkConfig, loadConfigFile, parseConfig } from '../../src/config/load.js'
import { ConfigError, formatProblem } from '../../src/errors.js'
import { at, describe, HASH, inspect } from './helpers.js'

const EXAMPLE = resolve('config/gateway.yaml')

t.test('every problem carries the line and column of the offending key or value', async (t) => {
  const yaml = [
    'listen: 0.0.0.0:8080', //                      1
    'authorization_server:', //                      2
    '  clients:', //                                 3
    '    - client_id: web', //                       4
    '      type: confidental', //                    5  value at col 13
    '      secret_hash: nope', //                    6  value at col 20
    '      redirect_uris: [https://app.example.com/cb]', // 7
    'routes:', //                                    8
    '  - name: orders', //                           9
    '    match:', //                                 10
    '      path: orders/', //                        11 value at col 13
    '    upstream: http://127.0.0.1:3000', //        12
    '    scopez: {}', //                             13 key at col 5
  ].join('\n')
  const { config, problems } = inspect(yaml)
  t.equal(config, null)
  const expected = [
    { path: 'authorization_server.clients[0].type', line: 5, col: 13 },
    { path: 'authorization_server.clients[0].secret_hash', line: 6, col: 20 },
    { path: 'routes[0].match.path', line: 11, col: 13 },
    { path: 'routes[0].scopez', line: 13, col: 5 },
  ]
  for (const e of expected) {
    const found = at(problems, e.path)
    t.equal(found.length, 1, `one problem at ${e.path}\n${describe(problems)}`)
    t.match(found[0], { line: e.line, col: e.col, file: 'test/fixtures/config/good/inline.yaml' }, e.path)
  }
  t.equal(problems.length, expected.length, describe(problems))
  t.match(at(problems, 'authorization_server.clients[0].type')[0]?.message, 'did you mean `confidential`?')
  t.match(at(problems, 'routes[0].scopez')[0]?.message, 'did you mean `scopes`?')
  t.match(at(problems, 'routes[0].match.path')[0]?.message, 'must start with `/`; write `/orders`')
})

t.test('a missing required key points at the mapping that lacks it', async (t) => {
  const { problems } = inspect(['authorization_server: {}', 'routes:', '  - name: orders', '    upstream: http://127.0.0.1:3000'].join('\n'))
  const [missing] = at(problems, 'routes[0].match')
  t.match(missing, { line: 3, col: 5, message: /missing required key `match`/ })
})

t.test('all problems are reported at once, in file order', async (t) => {
  const yaml = `
lisen: 8080
public_url: ftp://example.com
authorization_server:
  code_ttl: 11m
  clients:
    - client_id: a
      type: public
      grant_types: [password]
gateway:
  clock_skew: 2m
routes:
  - name: r
    match: { path: /a//b }
    upstream: nope
`
  const { problems } = inspect(yaml)
  t.same(
    problems.map((p) => p.path),
    [
      'lisen',
      'public_url',
      'authorization_server.code_ttl',
      'authorization_server.clients[0].grant_types[0]',
      'gateway.clock_skew',
      'routes[0].match.path',
      'routes[0].upstream',
    ],
    describe(problems),
  )
  const error = t.throws(() => parseConfig(yaml, 'x.yaml', {})) as ConfigError
  t.type(error, ConfigError)
  t.equal(error.problems.length, 7)
  t.equal(error.message.split('\n').length, 7, 'the message has one line per problem')
  t.match(error.message, /^x\.yaml:2:1: lisen: unknown key `lisen`; did you mean `listen`\?/)
})

t.test('YAML syntax errors are positioned problems', async (t) => {
  const { config, problems } = inspect('listen: 0.0.0.0:8080\nroutes:\n  - name: x\n   upstream: y\n')
  t.equal(config, null)
  t.ok(problems.length >= 1)
  t.match(problems[0], { line: 4, col: 1, path: '', message: /^YAML syntax: / })

  const unclosed = inspect('listen: [0.0.0.0:8080\nlog: { level: info }\n').problems
  t.ok(unclosed.length >= 1, describe(unclosed))
  t.ok(unclosed.every((p) => p.message.startsWith('YAML syntax') && p.line >= 1 && p.col >= 1))
})

t.test('a duplicate key is a positioned problem and the rest is still validated', async (t) => {
  const { problems } = inspect('listen: 0.0.0.0:1\nlisten: 0.0.0.0:2\nlog: { level: loud }\n')
  t.match(problems[0], { line: 2, col: 1, message: /duplicate key/ })
  t.match(at(problems, 'log.level')[0], { line: 3, col: 15 })
})

t.test('the document root must be a mapping; an empty file is all defaults', async (t) => {
  t.match(inspect('- a\n- b\n').problems, [{ line: 1, col: 1, message: /expected a mapping/ }])
  const empty = inspect('')
  t.ok(empty.config)
  t.same(empty.problems, [])
})

t.test('loadConfigFile: reads, validates, resolves paths against the file, and freezes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'bw-config-'))
  writeFileSync(join(dir, 'signing.jwk'), '{}')
  writeFileSync(join(dir, 'bw.yaml'), `authorization_server:\n  keys: [{ file: signing.jwk }]\n`)
  const config = await loadConfigFile(join(dir, 'bw.yaml'), {})
  t.equal(config.file, join(dir, 'bw.yaml'))
  t.same(config.authorizationServer?.keys, [{ file: join(dir, 'signing.jwk') }])
  t.ok(Object.isFrozen(config))
  t.ok(Object.isFrozen(config.authorizationServer?.keys))
  t.ok(Object.isFrozen(config.authorizationServer?.keys[0]))
  t.ok(Object.isFrozen(config.gateway.identityHeaders))
  t.throws(() => {
    ;(config.listen as { port: number }).port = 1
  }, TypeError)

  writeFileSync(join(dir, 'missing.yaml'), `authorization_server:\n  keys: [{ file: nope.jwk }]\n`)
  const error = (await loadConfigFile(join(dir, 'missing.yaml'), {}).catch((e: unknown) => e)) as ConfigError
  t.type(error, ConfigError)
  t.match(error.problems, [{ line: 2, col: 18, path: 'authorization_server.keys[0].file', message: `file not found: ${join(dir, 'nope.jwk')}` }])
})

t.test('a file that cannot be read is a problem, not a crash', async (t) => {
  const check = await checkConfig('/nonexistent/bearward.yaml', {})
  t.equal(check.config, null)
  t.match(check.problems, [{ file: '/nonexistent/bearward.yaml', line: 1, col: 1, message: /no such file/ }])
  await t.rejects(loadConfigFile('/nonexistent/bearward.yaml', {}), ConfigError)
})

t.test('the example config loads, with the documented warnings', async (t) => {
  const { config, problems, warnings } = await checkConfig(EXAMPLE, {})
  t.same(problems, [])
  t.ok(config)
  t.match(config, {
    listen: { host: '127.0.0.1', port: 8080 },
    adminListen: { host: '127.0.0.1', port: 9090 },
    publicUrl: 'http://localhost:8080',
    store: { kind: 'memory' },
    authorizationServer: { keys: [] },
  })
  const as = config?.authorizationServer
  t.same(
    as?.clients.map((c) => [c.clientId, c.type, c.grantTypes]),
    [
      ['demo-web', 'confidential', ['authorization_code', 'refresh_token']],
      ['demo-service', 'confidential', ['client_credentials']],
      ['demo-cli', 'public', ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code']],
    ],
  )
  t.same(as?.clients[0]?.redirectUris, ['http://127.0.0.1:5555/callback'])
  t.same(as?.clients[2]?.redirectUris, ['http://127.0.0.1/callback'])
  t.equal(as?.clients[1]?.introspect, true)
  t.equal(as?.users[0]?.username, 'demo')
  t.ok(as?.scopes['orders:read'] && as.scopes['orders:write'])
  t.match(config?.routes, [
    { name: 'orders', match: { path: '/orders' }, upstream: 'http://127.0.0.1:3000', public: false, scopes: { GET: ['orders:read'], POST: ['orders:write'] } },
    { name: 'docs', match: { path: '/docs' }, upstream: 'http://127.0.0.1:3001', public: true },
  ])

  t.same(
    warnings.map((w) => w.path),
    [
      'authorization_server.keys',
      'authorization_server.clients[0].secret_hash',
      'authorization_server.clients[1].secret_hash',
      'authorization_server.users[0].password_hash',
    ],
    describe(warnings),
  )
  t.match(warnings[0]?.message, /ephemeral key/)
  t.match(warnings[1]?.message, /DEMO secret `demo-secret`/)
  t.match(warnings[3]?.message, /DEMO password `demo-password`/)
  t.ok(
    warnings.every((w) => w.file === EXAMPLE && w.line > 1),
    warnings.map(formatProblem).join('\n'),
  )
})

t.test('the demo secrets are refused on a network listen unless BEARWARD_ALLOW_DEMO=1 (the image with no config mounted)', async (t) => {
  // The Docker image sets BEARWARD_LISTEN=0.0.0.0:8080 and falls back to the example config.
  const image = await checkConfig(EXAMPLE, { BEARWARD_LISTEN: '0.0.0.0:8080' })
  t.equal(image.config, null, 'the image does not start on the demo config')
  t.equal(image.problems.length, 1)
  t.equal(image.problems[0]?.path, 'listen')
  t.match(image.problems[0]?.message, /client `demo-web`, client `demo-service`, user `demo` still use a public DEMO secret/)
  t.match(image.problems[0]?.message, /BEARWARD_ALLOW_DEMO=1/, 'the message says what to do')
  const allowed = await checkConfig(EXAMPLE, { BEARWARD_LISTEN: '0.0.0.0:8080', BEARWARD_ALLOW_DEMO: '1' })
  t.same(allowed.problems, [], 'the operator may insist')
  t.match(allowed.config?.listen, { host: '0.0.0.0', port: 8080 })
  t.equal((await checkConfig(EXAMPLE, { BEARWARD_LISTEN: '0.0.0.0:8080', BEARWARD_ALLOW_DEMO: 'yes' })).config, null, 'only 1 says so')

  const demoUser = (listen: string): string =>
    `listen: ${listen.startsWith('[') ? `"${listen}"` : listen}\nauthorization_server:\n  users:\n    - username: demo\n      password_hash: "scrypt$16384$8$1$Xg4RwaADC0DMb75lzB2hIw$4DPebt_jLGmC_340SLD_j-d605lpJ8SBvJnUCSZrQT0"\n`
  for (const loopback of ['127.0.0.1:8080', '127.8.9.10:0', 'localhost:8080', '[::1]:8080']) {
    t.same(inspect(demoUser(loopback)).problems, [], `${loopback} only warns`)
  }
  for (const network of ['0.0.0.0:8080', '[::]:8080', '10.1.2.3:8080', 'gateway.example.com:8080', '8080']) {
    t.match(inspect(demoUser(network)).problems, [{ path: 'listen', message: /user `demo` still uses a public DEMO secret/ }], `${network} is refused`)
  }
  const realUser = `listen: 0.0.0.0:8080\nauthorization_server:\n  users:\n    - username: ann\n      password_hash: "${HASH}"\n`
  t.same(inspect(realUser).problems, [], 'a real password on the network is fine')
})

t.test('the example demo hashes are real scrypt hashes of the documented demo secrets', async (t) => {
  const { scryptSync, timingSafeEqual } = await import('node:crypto')
  const config = await loadConfigFile(EXAMPLE, {})
  const check = (hash: string, secret: string): boolean => {
    const [, n, r, p, salt, expected] = hash.split('$') as [string, string, string, string, string, string]
    const want = Buffer.from(expected, 'base64url')
    const got = scryptSync(secret, Buffer.from(salt, 'base64url'), want.length, { N: Number(n), r: Number(r), p: Number(p) })
    return timingSafeEqual(got, want)
  }
  const as = config.authorizationServer
  t.ok(as)
  t.ok(check(as?.clients[0]?.secretHash ?? '', 'demo-secret'), 'demo-web')
  t.ok(check(as?.clients[1]?.secretHash ?? '', 'demo-secret'), 'demo-service')
  t.ok(check(as?.users[0]?.passwordHash ?? '', 'demo-password'), 'demo user')
  t.notOk(check(as?.users[0]?.passwordHash ?? '', 'demo-secret'))
})

t.test('checkConfig reports warnings even when the config has problems', async (t) => {
  const { config, problems, warnings } = inspect(`authorization_server:\n  users:\n    - username: u\n      password_hash: "${HASH}"\n      claims: []\n`)
  t.equal(config, null)
  t.equal(at(problems, 'authorization_server.users[0].claims').length, 1)
  t.equal(at(warnings, 'authorization_server.keys').length, 1)
})

t.test('parseConfig on inline text: file <inline>, optional file checks', async (t) => {
  const yaml = 'authorization_server:\n  keys: [{ file: /nonexistent/signing.jwk }]\n'
  t.throws(() => parseConfig(yaml, undefined, {}), ConfigError)
  const config = parseConfig(yaml, undefined, {}, { checkFiles: false })
  t.equal(config.file, '<inline>')
  t.same(config.authorizationServer?.keys, [{ file: '/nonexistent/signing.jwk' }])
})
