/**
 * Config of step-up (RFC 9470): `routes[].authentication` for every method
 * or per method, and `{ scopes, authentication }` rules under `mcp`. Refusals
 * are positioned (line:col and the dotted path) and say what to write.
 */
import t from 'tap'
import { at, describe, inspect } from './helpers.js'

const route = (extra: string): string => `
routes:
  - name: r
    match: { path: /pay }
    upstream: http://127.0.0.1:3000
    issuers: [corp]
${extra
  .trim()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
issuers:
  - id: corp
    issuer: https://idp.example.com
    jwks_uri: https://idp.example.com/jwks.json
`

t.test('a plain rule applies to every method; per-method rules upper-case their methods', async (t) => {
  const plain = inspect(route('authentication: { acr: [mfa, phr, mfa], max_age: 5m }'))
  t.same(plain.problems, [], describe(plain.problems))
  t.same(plain.config?.routes[0]?.authentication, { '*': { acr: ['mfa', 'phr'], maxAgeSec: 300 } })
  const one = inspect(route('authentication: { max_age: 90 }'))
  t.same(one.config?.routes[0]?.authentication, { '*': { acr: null, maxAgeSec: 90 } })
  const per = inspect(route('authentication: { delete: { acr: [mfa] }, "*": {} }'))
  t.same(per.problems, [], describe(per.problems))
  t.same(per.config?.routes[0]?.authentication, { DELETE: { acr: ['mfa'], maxAgeSec: null }, '*': { acr: null, maxAgeSec: null } })
  t.same(inspect(route('')).config?.routes[0]?.authentication, {}, 'absent: nothing demanded')
})

t.test('refusals, each where it is', async (t) => {
  const duration = inspect(route('authentication: { acr: [mfa], max_age: 5 minutes }'))
  t.match(at(duration.problems, 'routes[0].authentication.max_age'), [{ message: /is not a duration/, line: 7 }])
  const ms = inspect(route('authentication: { max_age: 1500ms }'))
  t.match(at(ms.problems, 'routes[0].authentication.max_age'), [{ message: /whole number of seconds/ }])
  const empty = inspect(route('authentication: { acr: [] }'))
  t.match(at(empty.problems, 'routes[0].authentication.acr'), [{ message: /an empty list would accept no sign-in/, line: 7 }])
  const nothing = inspect(route('authentication: {}'))
  t.match(at(nothing.problems, 'routes[0].authentication'), [{ message: /name `acr`.*`max_age`/ }])
  const typo = inspect(route('authentication: { acr: [mfa], maxage: 5m }'))
  t.match(at(typo.problems, 'routes[0].authentication.maxage'), [{ message: /did you mean `max_age`\?/ }])
  const spaced = inspect(route('authentication: { acr: ["m f a"] }'))
  t.match(at(spaced.problems, 'routes[0].authentication.acr[0]'), [{ message: /is not an acr value/ }])
  const method = inspect(route('authentication: { "GE T": { max_age: 1m } }'))
  t.match(at(method.problems, 'routes[0].authentication["GE T"]'), [{ message: /is not `acr`, `max_age`, an HTTP method/ }])
  const never = inspect(route('match: { path: /pay, methods: [GET] }\nauthentication: { POST: { max_age: 1m } }').replace('    match: { path: /pay }\n', ''))
  t.match(at(never.problems, 'routes[0].authentication.POST'), [{ message: /can never apply/ }])
  const disjoint = inspect(route('authentication: { GET: { acr: [a] }, POST: { acr: [b] } }'))
  t.match(at(disjoint.problems, 'routes[0].authentication'), [{ message: /no acr value is in all of them; add a `"\*"` rule/ }])
  t.same(inspect(route('authentication: { GET: { acr: [a] }, POST: { acr: [b] }, "*": { acr: [a] } }')).problems, [])
  const pub = inspect(`
routes:
  - name: docs
    match: { path: /docs }
    upstream: http://127.0.0.1:3000
    public: true
    authentication: { max_age: 5m }
`)
  t.match(at(pub.problems, 'routes[0].authentication'), [{ message: /public route takes no token/ }])
  for (const c of [duration, empty, nothing, pub]) t.equal(c.config, null, 'a config with a problem is not used')
})

t.test('MCP rules: a list of scopes, or { scopes, authentication }', async (t) => {
  const ok = inspect(
    route(`mcp:
  tools:
    get_order: [orders:read]
    delete_order: { scopes: [orders:write], authentication: { acr: [mfa], max_age: 5m } }
    "admin_*": { authentication: { max_age: 1m } }`),
  )
  t.same(ok.problems, [], describe(ok.problems))
  t.same(ok.config?.routes[0]?.mcp?.tools, { get_order: ['orders:read'], delete_order: ['orders:write'] }, 'a step-up alone adds no scope')
  t.same(ok.config?.routes[0]?.mcp?.authentication, {
    tools: { delete_order: { acr: ['mfa'], maxAgeSec: 300 }, 'admin_*': { acr: null, maxAgeSec: 60 } },
    resources: {},
    prompts: {},
  })
  const bad = inspect(route('mcp: { tools: { a: {}, b: { scope: [x] }, c: { authentication: { acr: [] } } }, prompts: { p: 5 } }'))
  t.match(at(bad.problems, 'routes[0].mcp.tools.a'), [{ message: /name the `scopes` or the `authentication` this tool needs/ }])
  t.match(at(bad.problems, 'routes[0].mcp.tools.b.scope'), [{ message: /did you mean `scopes`\?/ }])
  t.match(at(bad.problems, 'routes[0].mcp.tools.c.authentication.acr'), [{ message: /empty list/ }])
  t.match(at(bad.problems, 'routes[0].mcp.prompts.p'), [{ message: /expected a list/ }])
})

t.test("an MCP rule's acr must share a value with the route's rule for POST", async (t) => {
  const clash = inspect(
    route(`authentication: { acr: [pwd, otp] }
mcp:
  tools:
    delete_order: { authentication: { acr: [hwk] } }
    refund: { authentication: { acr: [otp, hwk] } }`),
  )
  t.match(at(clash.problems, 'routes[0].mcp.tools.delete_order.authentication.acr'), [{ message: /no value here is one the route's `authentication` accepts/ }])
  t.same(at(clash.problems, 'routes[0].mcp.tools.refund.authentication.acr'), [], 'a shared value is enough')
  const perMethod = inspect(
    route(`authentication: { GET: { acr: [hwk] }, POST: { acr: [pwd] } }
mcp: { tools: { t: { authentication: { acr: [hwk] } } } }`),
  )
  t.equal(at(perMethod.problems, 'routes[0].mcp.tools.t.authentication.acr').length, 1, "judged against POST's rule")
})

t.test('with the built-in issuer, its own acr values are ranked in these checks too', async (t) => {
  const self = (extra: string): string =>
    `
authorization_server: { clients: [] }
routes:
  - name: r
    match: { path: /pay }
    upstream: http://127.0.0.1:3000
${extra
  .trim()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
`
  const perMethod = inspect(self('authentication: { GET: { acr: [mfa] }, POST: { acr: [phr] } }'))
  t.same(perMethod.problems, [], 'a phr sign-in meets both')
  const tool = inspect(self('authentication: { acr: [phr] }\nmcp: { tools: { t: { authentication: { acr: [mfa] } } } }'))
  t.same(tool.problems, [], describe(tool.problems))
  const remote = inspect(route('authentication: { GET: { acr: [mfa] }, POST: { acr: [phr] } }'))
  t.equal(at(remote.problems, 'routes[0].authentication').length, 1, "another issuer's values are not ranked")
})
