/**
 * Attacks on the demo-secret refusal (#38): the published `demo-secret` /
 * `demo-password` must not serve a network listen unless BEARWARD_ALLOW_DEMO=1,
 * whatever spelling of the demo hash the config uses, and whichever way the
 * config reaches the running process (start or hot reload).
 */
import t from 'tap'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import { App } from '../../src/app.js'
import { SecretVerifier } from '../../src/crypto/secret.js'
import { HASH, inspect } from '../config/helpers.js'

const DEMO_SECRET_HASH = 'scrypt$16384$8$1$T_fa9RH8qvVUH6zmXvgxwg$5I6XnQ5GNOnSvh4hfIvI-IzxZqino7IpleF2VoTz-9U'

/** A config with one client whose secret hash is `hash`, listening on `listen`. */
function withClient(listen: string, hash: string): string {
  return [
    `listen: ${listen}`,
    'admin_listen: false',
    'public_url: http://localhost:8080',
    'authorization_server:',
    '  scopes: { "orders:read": Read }',
    '  clients:',
    '    - client_id: svc',
    '      type: confidential',
    `      secret_hash: "${hash}"`,
    '      grant_types: [client_credentials]',
    '      scopes: ["orders:read"]',
    '',
  ].join('\n')
}

/** The demo hash written another way that still verifies `demo-secret`. */
const RESPELT: ReadonlyArray<[string, string]> = [
  ['N with a leading zero', DEMO_SECRET_HASH.replace('$16384$', '$016384$')],
  ['r and p with leading zeros', DEMO_SECRET_HASH.replace('$8$1$', '$08$001$')],
  // 22 base64url characters carry 132 bits for a 128-bit salt: the last character's low bits are ignored on decode.
  ['the salt with other spare bits', DEMO_SECRET_HASH.replace('Xvgxwg$', 'Xvgxwh$')],
  ['the hash with other spare bits', DEMO_SECRET_HASH.replace(/U$/, 'V')],
]

t.test('a respelt demo hash is still the demo secret, and is refused on a network listen', async (t) => {
  const verifier = new SecretVerifier()
  for (const [what, hash] of RESPELT) {
    t.ok(await verifier.verify('demo-secret', hash), `${what}: still verifies demo-secret`)
    const { config, problems } = inspect(withClient('0.0.0.0:8080', hash))
    t.equal(config, null, `${what}: refused on 0.0.0.0`)
    t.match(problems, [{ path: 'listen', message: /client `svc` still uses a public DEMO secret/ }], what)
  }
})

t.test('a hot reload cannot bring the demo secrets onto a network listen by naming a loopback one', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'bearward-demo-reload-'))
  const file = join(dir, 'gateway.yaml')
  writeFileSync(file, withClient('0.0.0.0:0', HASH))
  const logs: string[] = []
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(chunk.toString('utf8'))
      done()
    },
  })
  const app = await App.start({ configPath: file, watch: false, env: {}, logDestination: sink })
  t.teardown(() => app.close())
  const served = app.addresses().listen
  t.match(served, /^http:\/\/0\.0\.0\.0:\d+$|^http:\/\/\[::\]:\d+$/, 'started on the network')

  // The new file says 127.0.0.1, which a reload cannot apply: the socket stays on 0.0.0.0.
  writeFileSync(file, withClient('127.0.0.1:0', DEMO_SECRET_HASH))
  t.equal(await app.reload(), false, 'the reload is refused')
  t.match(logs.join(''), /config reload refused[^\n]*DEMO secret/, 'the log says why')

  const port = new URL(served).port
  const res = await fetch(`http://127.0.0.1:${port}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from('svc:demo-secret').toString('base64')}` },
    body: 'grant_type=client_credentials',
  })
  t.equal(res.status, 401, 'demo-secret does not authenticate on the network listen')
  t.match(await res.json(), { error: 'invalid_client' })
})

t.test('other spellings of a network listen are refused with the demo secret; only loopback ones warn', async (t) => {
  // Each either names the network or cannot be shown to be loopback: refused (fail closed).
  // 127.300.0.1 is no IPv4 address: Node's listen looks it up as a DNS name (a search domain may answer anything).
  for (const listen of [
    '127.300.0.1:8080',
    '127.0.0.1000:8080',
    '0:8080',
    '127.1:8080',
    '"[::ffff:127.0.0.1]:8080"',
    '"[::ffff:7f00:1]:8080"',
    '"[::]:8080"',
    '2130706433:8080',
    '0x7f000001:8080',
  ]) {
    const { config, problems } = inspect(withClient(listen, DEMO_SECRET_HASH))
    t.equal(config, null, `${listen}: refused`)
    t.ok(
      problems.some((p) => p.path === 'listen'),
      `${listen}: a problem at listen (${problems.map((p) => p.message).join('; ')})`,
    )
  }
  // A trailing dot is no host name here: refused as a listen address, demo or not.
  t.equal(inspect(withClient('localhost.:8080', DEMO_SECRET_HASH)).config, null, 'localhost. is not a listen host')
  for (const listen of ['127.0.0.1:8080', 'LOCALHOST:8080', '"[::1]:8080"']) {
    t.same(inspect(withClient(listen, DEMO_SECRET_HASH)).problems, [], `${listen}: loopback, a warning only`)
  }
  // A case change of the hash is another salt and hash: it does not verify the demo secret, so it is no demo secret.
  t.notOk(await new SecretVerifier().verify('demo-secret', DEMO_SECRET_HASH.replace('T_fa9', 't_FA9')), 'a respelt case is another hash')
})
