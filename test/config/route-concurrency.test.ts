/**
 * `routes[].max_in_flight` and `routes[].max_streams` (issue #44,
 * "Concurrency limits"): both shapes read, and every mistake refused at
 * load where it was written.
 */
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const AS = `
authorization_server:
  clients:
    - { client_id: svc, type: confidential, secret_hash: "${HASH}", grant_types: [client_credentials] }
`

/** One route with `extra` (one line of flow YAML per key). */
const config = (extra: string, o: { public?: boolean } = {}): string => `
${AS}
routes:
  - name: orders
    match: { path: /orders }
    upstream: http://127.0.0.1:3000
${o.public === true ? '    public: true\n' : ''}${extra
  .trim()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
`

t.test('a route without either key has no concurrency step', async (t) => {
  const none = inspect(config(''))
  t.same(none.problems, [], describe(none.problems))
  t.equal(none.config?.routes[0]?.concurrency, null)
})

t.test('a number is the route-wide limit; a mapping adds a per-key limit', async (t) => {
  const plain = inspect(config('max_in_flight: 200'))
  t.same(plain.problems, [], describe(plain.problems))
  t.same(plain.config?.routes[0]?.concurrency, { maxInFlight: { route: 200, perKey: null }, maxStreams: null })

  const both = inspect(config('max_in_flight: { route: 100, per_key: { key: client, limit: 10 } }\nmax_streams: { per_key: { key: subject, limit: 2 } }'))
  t.same(both.problems, [], describe(both.problems))
  t.same(both.config?.routes[0]?.concurrency, {
    maxInFlight: { route: 100, perKey: { key: 'client', limit: 10 } },
    maxStreams: { route: null, perKey: { key: 'subject', limit: 2 } },
  })

  const env = inspect(config('max_streams: ${STREAMS}'), { STREAMS: '7' })
  t.same(env.problems, [], describe(env.problems))
  t.same(env.config?.routes[0]?.concurrency, { maxInFlight: null, maxStreams: { route: 7, perKey: null } })

  const address = inspect(config('max_in_flight: { per_key: { key: address, limit: 4 } }', { public: true }))
  t.same(address.problems, [], describe(address.problems))
  t.same(address.config?.routes[0]?.concurrency?.maxInFlight, { route: null, perKey: { key: 'address', limit: 4 } })
})

t.test('mistakes are refused where they are written', async (t) => {
  const zero = inspect(config('max_in_flight: 0'))
  t.match(at(zero.problems, 'routes[0].max_in_flight'), [{ message: /at least 1, got 0/ }])

  const word = inspect(config('max_streams: many'))
  t.match(at(word.problems, 'routes[0].max_streams'), [{ message: /expected a whole number/ }])

  const empty = inspect(config('max_in_flight: {}'))
  t.match(at(empty.problems, 'routes[0].max_in_flight'), [{ message: /needs `route`, `per_key` or both/ }])

  const typo = inspect(config('max_in_flight: { route: 5, per_client: 1 }'))
  t.ok(
    typo.problems.some((p) => p.path.startsWith('routes[0].max_in_flight') && /per_client/.test(p.message)),
    describe(typo.problems),
  )

  const badKey = inspect(config('max_streams: { per_key: { key: tool, limit: 1 } }'))
  t.match(at(badKey.problems, 'routes[0].max_streams.per_key.key'), [
    { message: /`tool` is not a concurrency key: expected one of `client`, `subject`, `grant`, `address`/ },
  ])

  const noLimit = inspect(config('max_streams: { per_key: { key: client } }'))
  t.ok(
    noLimit.problems.some((p) => p.path.startsWith('routes[0].max_streams.per_key') && /limit/.test(p.message)),
    describe(noLimit.problems),
  )

  const above = inspect(config('max_in_flight: { route: 5, per_key: { key: client, limit: 6 } }'))
  t.match(at(above.problems, 'routes[0].max_in_flight.per_key.limit'), [{ message: /per-key limit \(6\) above the route's \(5\) never applies/ }])

  const publicClient = inspect(config('max_in_flight: { per_key: { key: client, limit: 2 } }', { public: true }))
  t.match(at(publicClient.problems, 'routes[0].max_in_flight.per_key.key'), [
    { message: /public route takes no token, so it has no client to count by; use `key: address`/ },
  ])
})
