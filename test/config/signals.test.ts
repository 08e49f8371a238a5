/**
 * `signals` (Shared Signals transmitters): a push and a poll transmitter
 * with their defaults, and every mistake reported where it is.
 */
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const config = (transmitters: string, withAs = true): string => `
public_url: https://auth.example.com
${
  withAs
    ? `authorization_server:
  identity_providers:
    - { id: corp, name: Corp, issuer: https://idp.example.com, client_id: bw }
  clients:
    - { client_id: web, type: confidential, secret_hash: "${HASH}", redirect_uris: [https://app.example.com/cb], grant_types: [authorization_code] }`
    : ''
}
signals:
  transmitters:
${transmitters}
`

t.test('a push and a poll transmitter, with their defaults', async (t) => {
  const { config: c, problems } = inspect(
    config(`    - { issuer: https://idp.example.com, jwks_uri: https://idp.example.com/jwks, audience: https://auth.example.com, delivery: push }
    - issuer: https://risc.example.com
      jwks_uri: https://risc.example.com/jwks
      audience: bearward
      delivery: poll
      poll: { url: https://risc.example.com/poll, interval: 1m, max_events: 50, auth: "Bearer x" }
      on_signal: sessions
      algorithms: [RS256]
      subjects: { email: "provider:corp" }`),
  )
  t.same(problems, [], describe(problems))
  const [push, poll] = c?.signals?.transmitters ?? []
  t.match(push, { delivery: 'push', poll: null, onSignal: 'grants', algorithms: ['RS256', 'ES256'], subjects: { email: null } })
  t.match(poll, {
    delivery: 'poll',
    poll: { url: 'https://risc.example.com/poll', intervalSec: 60, maxEvents: 50, auth: 'Bearer x', timeoutMs: 10_000 },
    onSignal: 'sessions',
    algorithms: ['RS256'],
    subjects: { email: { kind: 'provider', provider: 'corp' } },
  })
})

t.test('signals mistakes', async (t) => {
  const base = 'issuer: https://idp.example.com, jwks_uri: https://idp.example.com/jwks, audience: a'
  const cases: Array<[string, string, RegExp]> = [
    [`    - { ${base}, delivery: poll }`, 'poll', /needs `poll: \{ url/],
    [`    - { ${base}, delivery: push, poll: { url: https://idp.example.com/poll } }`, 'poll', /is for `delivery: poll`/],
    [`    - { ${base}, delivery: carrier-pigeon }`, 'delivery', /not a delivery method/],
    [`    - { ${base}, delivery: push, algorithms: [HS256] }`, 'algorithms[0]', /asymmetric/],
    [`    - { ${base}, delivery: push, algorithms: [none] }`, 'algorithms[0]', /asymmetric/],
    [`    - { ${base}, delivery: push, on_signal: everything }`, 'on_signal', /not an on_signal value/],
    [`    - { ${base}, delivery: push, subjects: { email: "provider:nobody" } }`, 'subjects.email', /no identity provider/],
    [`    - { ${base}, delivery: push, subjects: { email: guess } }`, 'subjects.email', /`users` or `provider:/],
    [`    - { ${base}, delivery: poll, poll: { url: https://idp.example.com/poll, max_events: 5000 } }`, 'poll.max_events', /1000/],
    ['    - { issuer: https://idp.example.com, audience: a, delivery: push }', 'jwks_uri', /required|missing/],
  ]
  for (const [transmitters, key, message] of cases) {
    const { problems } = inspect(config(transmitters))
    t.match(at(problems, `signals.transmitters[0].${key}`), [{ message }], `${key}: ${describe(problems)}`)
  }
  const twice = inspect(
    config(`    - { ${base}, delivery: push }
    - { ${base}, delivery: push }`),
  )
  t.ok(
    twice.problems.some((p) => p.path.startsWith('signals.transmitters[1]')),
    `a transmitter issuer given twice: ${describe(twice.problems)}`,
  )
  const noAs = inspect(config(`    - { ${base}, delivery: push }`, false))
  t.match(at(noAs.problems, 'signals'), [{ message: /add `authorization_server`/ }], describe(noAs.problems))
})

/** `signals.transmitter` alone (no transmitters to receive from). */
const outConfig = (transmitter: string): string => `
public_url: https://auth.example.com
authorization_server:
  clients:
    - { client_id: rp, type: confidential, secret_hash: "${HASH}", grant_types: [client_credentials], scopes: [ssf:stream] }
signals:
  transmitter: ${transmitter}
`

t.test('signals.transmitter: its defaults, and ssf:stream a known scope', async (t) => {
  const on = inspect(outConfig('{ enabled: true }'))
  t.same(on.problems, [], describe(on.problems))
  t.same(on.config?.signals?.transmitter, { allowHosts: [], queueMax: 1000 })
  t.same(on.config?.signals?.transmitters, [])
  const set = inspect(outConfig('{ enabled: true, allow_hosts: [Receiver.Internal, "[fd00::1]"], queue: { max: 50 } }'))
  t.same(set.problems, [], describe(set.problems))
  t.same(set.config?.signals?.transmitter, { allowHosts: ['receiver.internal', '[fd00::1]'], queueMax: 50 })
  const off = inspect(outConfig('{ enabled: false, queue: { max: 50 } }'))
  t.same(off.problems, [], describe(off.problems))
  t.equal(off.config?.signals?.transmitter, null, '`enabled: false` is off')
})

t.test('signals.transmitter mistakes', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['{ allow_hosts: [a.example] }', 'signals.transmitter.enabled', /required|missing/],
    ['{ enabled: true, allow_hosts: ["https://a.example:443"] }', 'signals.transmitter.allow_hosts[0]', /not a host name/],
    ['{ enabled: true, queue: { max: 0 } }', 'signals.transmitter.queue.max', /1/],
    ['{ enabled: true, queue: { max: 1000000 } }', 'signals.transmitter.queue.max', /100000/],
    ['{ enabled: true, queue: { size: 5 } }', 'signals.transmitter.queue.size', /unknown|not allowed|Unknown/],
    ['{ enabled: yes-please }', 'signals.transmitter.enabled', /`true` or `false`/],
  ]
  for (const [transmitter, path, message] of cases) {
    const { problems } = inspect(outConfig(transmitter))
    t.match(at(problems, path), [{ message }], `${path}: ${describe(problems)}`)
  }
})
