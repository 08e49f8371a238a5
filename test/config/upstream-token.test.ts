/**
 * `routes[].upstream_token` (issue #31, "No passthrough at the gateway"):
 * what the signed modes default to, and every combination refused at load,
 * where it was written.
 */
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const AS = `
authorization_server:
  clients:
    - { client_id: svc, type: confidential, secret_hash: "${HASH}", grant_types: [client_credentials] }
`

/** One route (indented keys in `extra`), with the authorization server unless `as` is false. */
const config = (extra: string, o: { as?: boolean; upstream?: string; more?: string } = {}): string => `
${o.as === false ? 'issuers: [{ id: corp, issuer: https://idp.example.com, jwks_uri: https://idp.example.com/jwks.json }]' : AS}
routes:
  - name: orders
    match: { path: /orders }
    upstream: ${o.upstream ?? 'http://127.0.0.1:3000/api'}
${o.as === false ? '    issuers: [corp]\n' : ''}${extra
  .trim()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
${o.more ?? ''}`

/** Where `needle` is in `yaml` (1-based line and column), as a problem reports it. */
const where = (yaml: string, needle: string): { line: number; col: number } => {
  const lines = yaml.split('\n')
  const line = lines.findIndex((l) => l.includes(needle))
  return { line: line + 1, col: (lines[line] ?? '').indexOf(needle) + 1 }
}

t.test('passthrough is the default; the signed modes default to the upstream and the route', async (t) => {
  const none = inspect(config(''))
  t.same(none.problems, [], describe(none.problems))
  t.equal(none.config?.routes[0]?.upstreamToken, null)
  const explicit = inspect(config('upstream_token: passthrough'))
  t.equal(explicit.config?.routes[0]?.upstreamToken, null)

  const exchange = inspect(config('upstream_token: exchange\nscopes: { GET: [orders:read], POST: [orders:write, orders:read] }'))
  t.same(exchange.problems, [], describe(exchange.problems))
  t.same(exchange.config?.routes[0]?.upstreamToken, {
    mode: 'exchange',
    audience: 'http://127.0.0.1:3000',
    scopes: ['orders:read', 'orders:write'],
    lifetimeSec: 60,
    header: 'authorization',
  })

  const assertion = inspect(config('upstream_token: assertion\nmcp: { tools: { delete: [orders:delete] } }'))
  t.same(assertion.problems, [], describe(assertion.problems))
  t.same(assertion.config?.routes[0]?.upstreamToken, {
    mode: 'assertion',
    audience: 'http://127.0.0.1:3000',
    scopes: ['orders:delete'],
    lifetimeSec: 30,
    header: 'x-bearward-assertion',
  })

  const set = inspect(
    config(
      'upstream_token: assertion\nupstream_assertion: { header: X-Orders-Identity }\nupstream_audience: https://orders.internal\nupstream_scopes: [a, b, a]\nupstream_token_lifetime: 10s',
    ),
  )
  t.same(set.problems, [], describe(set.problems))
  t.same(set.config?.routes[0]?.upstreamToken, {
    mode: 'assertion',
    audience: 'https://orders.internal',
    scopes: ['a', 'b'],
    lifetimeSec: 10,
    header: 'x-orders-identity',
  })
})

t.test('what the signed modes cannot be combined with, refused where it is written', async (t) => {
  const noAsYaml = config('upstream_token: exchange', { as: false })
  const noAs = inspect(noAsYaml)
  t.match(at(noAs.problems, 'routes[0].upstream_token'), [
    { ...where(noAsYaml, 'exchange'), message: /signed with the authorization server's keys, and there is no `authorization_server`/ },
  ])

  const fwdYaml = config('forward_authorization: true\nupstream_token: assertion')
  const fwd = inspect(fwdYaml)
  t.match(at(fwd.problems, 'routes[0].forward_authorization'), [
    { ...where(fwdYaml, 'true'), message: /Authorization header is never forwarded; remove `forward_authorization`/ },
  ])

  const pub = inspect(config('public: true\nupstream_token: exchange'))
  t.match(at(pub.problems, 'routes[0].upstream_token'), [{ message: /public route takes no token/ }])

  const wrongMode = inspect(config('upstream_token: exchange\nupstream_assertion: { header: X-A }'))
  t.match(at(wrongMode.problems, 'routes[0].upstream_assertion'), [{ message: /applies with `upstream_token: assertion`/ }])

  const passthrough = inspect(config('upstream_audience: https://x.example\nupstream_token_lifetime: 10s'))
  t.match(at(passthrough.problems, 'routes[0].upstream_audience'), [{ message: /applies with `upstream_token: exchange` or `assertion`/ }])
  t.match(at(passthrough.problems, 'routes[0].upstream_token_lifetime'), [{ message: /applies with/ }])

  const typo = inspect(config('upstream_token: exchnage'))
  t.match(at(typo.problems, 'routes[0].upstream_token'), [{ message: /exchange/ }])
  t.equal(typo.config, null, 'a config with problems is not built')
})

t.test('values a signed mode refuses', async (t) => {
  const ownAudYaml = config('upstream_token: exchange\nupstream_audience: http://localhost:8080/orders')
  const ownAud = inspect(ownAudYaml)
  t.match(at(ownAud.problems, 'routes[0].upstream_audience'), [
    { ...where(ownAudYaml, 'http://localhost:8080/orders'), message: /an audience of bearward itself/ },
  ])
  const publicUrl = inspect(config('upstream_token: exchange\nupstream_audience: http://localhost:8080'))
  t.match(at(publicUrl.problems, 'routes[0].upstream_audience'), [{ message: /an audience of bearward itself/ }])
  const other = inspect(
    config('upstream_token: exchange\nupstream_audience: https://orders.internal', {
      more: '  - name: other\n    match: { path: /other }\n    upstream: http://127.0.0.1:3001\n    audience: https://orders.internal\n',
    }),
  )
  t.match(at(other.problems, 'routes[0].upstream_audience'), [{ message: /an audience route `other` accepts/ }])

  for (const [header, why] of [
    ['Authorization', /a header the gateway writes or drops itself/],
    ['DPoP', /writes or drops itself/],
    ['X-Forwarded-User', /writes or drops itself/],
    ['X_Auth_Subject', /one of this route's identity headers/],
    ['"X Bad"', /not an HTTP header name/],
  ] as const) {
    const bad = inspect(config(`upstream_token: assertion\nupstream_assertion: { header: ${header} }`))
    t.match(at(bad.problems, 'routes[0].upstream_assertion.header'), [{ message: why }], header)
  }
  const unknown = inspect(config('upstream_token: assertion\nupstream_assertion: { hedaer: X-A }'))
  t.match(at(unknown.problems, 'routes[0].upstream_assertion.hedaer'), [{ message: /did you mean `header`\?/ }])

  const long = inspect(config('upstream_token: exchange\nupstream_token_lifetime: 1h'))
  t.equal(at(long.problems, 'routes[0].upstream_token_lifetime').length, 1, 'at most 5 minutes')
  const scope = inspect(config('upstream_token: exchange\nupstream_scopes: ["a b"]'))
  t.match(at(scope.problems, 'routes[0].upstream_scopes[0]'), [{ message: /not a valid scope name/ }])
})
