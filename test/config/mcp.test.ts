/**
 * Config of the MCP authorization gateway: `routes[].protected_resource`
 * (RFC 9728), `routes[].mcp` (per-tool scopes).
 */
import t from 'tap'
import { at, describe, inspect } from './helpers.js'

const route = (extra: string): string => `
routes:
  - name: r
    match: { path: /mcp }
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

t.test('protected_resource: default on, false hides, a mapping names it', async (t) => {
  const on = inspect(route(''))
  t.same(on.problems, [], describe(on.problems))
  t.same(on.config?.routes[0]?.protectedResource, { resource: 'http://localhost:8080/mcp', name: null, documentation: null })
  t.same(on.config?.routes[0]?.audiences, ['http://localhost:8080', 'http://localhost:8080/mcp'])
  const off = inspect(route('protected_resource: false'))
  t.equal(off.config?.routes[0]?.protectedResource, null)
  t.same(off.config?.routes[0]?.audiences, ['http://localhost:8080'], 'no metadata: no resource identifier to accept')
  const yes = inspect(route('protected_resource: true'))
  t.equal(yes.config?.routes[0]?.protectedResource?.resource, 'http://localhost:8080/mcp')
  const env = inspect(route('protected_resource: { resource: "${RES}" }'), { RES: 'https://mcp.example.com/mcp' })
  t.same(env.problems, [], describe(env.problems))
  t.equal(env.config?.routes[0]?.protectedResource?.resource, 'https://mcp.example.com/mcp')
})

t.test('protected_resource rules', async (t) => {
  const bad = inspect(route('protected_resource: { resource: "https://x.example.com/mcp#frag", documentation: "ftp://docs", nme: X }'))
  t.match(at(bad.problems, 'routes[0].protected_resource.resource'), [{ message: /fragment.*RFC 9728 1\.2/ }])
  t.match(at(bad.problems, 'routes[0].protected_resource.documentation'), [{ message: /use http:\/\/ or https:\/\// }])
  t.match(at(bad.problems, 'routes[0].protected_resource.nme'), [{ message: /did you mean `name`\?/ }])
  const relative = inspect(route('protected_resource: { resource: /mcp }'))
  t.match(at(relative.problems, 'routes[0].protected_resource.resource'), [{ message: /not an absolute URL/ }])
  const pub = inspect(`
routes:
  - name: docs
    match: { path: /docs }
    upstream: http://127.0.0.1:3000
    public: true
    protected_resource: { name: Docs }
    mcp: { tools: { a: [x] } }
`)
  t.match(at(pub.problems, 'routes[0].protected_resource'), [{ message: /public route takes no token/ }])
  t.match(at(pub.problems, 'routes[0].mcp'), [{ message: /public route takes no token/ }])
  const pubFalse = inspect(`
routes:
  - name: docs
    match: { path: /docs }
    upstream: http://127.0.0.1:3000
    public: true
    protected_resource: false
`)
  t.same(pubFalse.problems, [], 'false on a public route says what is already so')
})

t.test('mcp rules', async (t) => {
  const ok = inspect(route('mcp: { tools: { delete_order: ["orders:write", "orders:write"] } }'))
  t.same(ok.problems, [], describe(ok.problems))
  t.same(ok.config?.routes[0]?.mcp, {
    tools: { delete_order: ['orders:write'] },
    resources: {},
    prompts: {},
    authentication: { tools: {}, resources: {}, prompts: {} },
    maxBodyBytes: 1024 * 1024,
    filterLists: true,
    protocolVersions: null,
    allowedOrigins: ['http://localhost:8080'],
    approvalTools: [],
    approvals: { ttlSec: 300, reuse: 'once', acr: [], maxAgeSec: 600, notify: null },
  })
  const all = inspect(
    route(`mcp:
  resources: { "orders://*": [orders:read] }
  prompts: { "*": [prompts] }
  filter_lists: false
  protocol_versions: ["2025-11-25", "2026-07-28", "2025-11-25"]
  allowed_origins: ["https://app.example.com"]`),
  )
  t.same(all.problems, [], describe(all.problems))
  t.match(all.config?.routes[0]?.mcp, {
    resources: { 'orders://*': ['orders:read'] },
    prompts: { '*': ['prompts'] },
    filterLists: false,
    protocolVersions: ['2025-11-25', '2026-07-28'],
    allowedOrigins: ['https://app.example.com'],
  })
  const wrong = inspect(
    route('mcp: { protocol_versions: [latest], allowed_origins: ["https://app.example.com/path"], prompts: { "": [x] }, filter_lists: maybe }'),
  )
  t.match(at(wrong.problems, 'routes[0].mcp.protocol_versions[0]'), [{ message: /not an MCP protocol revision/ }])
  t.match(at(wrong.problems, 'routes[0].mcp.allowed_origins[0]'), [{ message: /an origin has no path/ }])
  t.ok(
    wrong.problems.some((p) => p.path.startsWith('routes[0].mcp.prompts')),
    'an empty prompt name is refused',
  )
  t.ok(at(wrong.problems, 'routes[0].mcp.filter_lists').length > 0, 'filter_lists is a boolean')
  const empty = inspect(route('mcp: { protocol_versions: [] }'))
  t.match(at(empty.problems, 'routes[0].mcp.protocol_versions'), [{ message: /list the MCP revisions/ }])
  const bad = inspect(route('mcp: { tools: { a: [], b: ["bad scope"], c: x }, max_body: 0, extra: 1 }'))
  t.match(at(bad.problems, 'routes[0].mcp.tools.a'), [{ message: 'list the scopes this tool needs, or remove it' }])
  t.match(at(bad.problems, 'routes[0].mcp.tools.b[0]'), [{ message: /not a valid scope name/ }])
  t.match(at(bad.problems, 'routes[0].mcp.tools.c'), [{ message: /expected a list/ }])
  t.match(at(bad.problems, 'routes[0].mcp.max_body'), [{ message: /at least 1/ }])
  t.match(at(bad.problems, 'routes[0].mcp.extra'), [{ message: /unknown key/ }])
  const body = inspect(route('token_in_body: true\nmcp: { tools: {} }'))
  t.match(at(body.problems, 'routes[0].mcp'), [{ message: /cannot also take `token_in_body`/ }])
})

t.test('authorization_server.registration: off by default, defaults when on, rules', async (t) => {
  const base = (extra: string): string => `
authorization_server:
  scopes: { "mcp:tools": Use the tools }
${extra}
`
  t.equal(inspect(base('')).config?.authorizationServer?.registration, null)
  t.equal(inspect(base('  registration: { enabled: false, client_ttl: 1d }')).config?.authorizationServer?.registration, null)
  const on = inspect(base('  registration: { enabled: true }'))
  t.same(on.problems, [], describe(on.problems))
  t.same(on.config?.authorizationServer?.registration, {
    initialAccessToken: null,
    scopes: ['openid', 'profile', 'email', 'offline_access', 'mcp:tools'],
    clientTtlSec: 30 * 86400,
    maxClients: 10_000,
    perAddress: 30,
    windowSec: 3600,
  })
  const env = inspect(base('  registration: { enabled: true, initial_access_token: "${REG}", scopes: ["mcp:tools"] }'), {
    REG: 'a-long-enough-registration-token',
  })
  t.equal(env.config?.authorizationServer?.registration?.initialAccessToken, 'a-long-enough-registration-token')
  t.same(env.config?.authorizationServer?.registration?.scopes, ['mcp:tools'])
  const bad = inspect(
    base(
      '  registration: { enabled: yes, initial_access_token: short, scopes: ["mcp:tool"], client_ttl: 10s, max_clients: 0, rate_limit: { per_address: 0 }, extra: 1 }',
    ),
  )
  t.match(at(bad.problems, 'authorization_server.registration.enabled'), [{ message: /expected `true` or `false`/ }])
  t.match(at(bad.problems, 'authorization_server.registration.initial_access_token'), [{ message: /at least 16 characters/ }])
  t.match(at(bad.problems, 'authorization_server.registration.scopes[0]'), [{ message: /unknown scope `mcp:tool`/ }])
  t.match(at(bad.problems, 'authorization_server.registration.client_ttl'), [{ message: /at least 1m/ }])
  t.match(at(bad.problems, 'authorization_server.registration.rate_limit.per_address'), [{ message: /at least 1/ }])
  t.match(at(bad.problems, 'authorization_server.registration.max_clients'), [{ message: /at least 1/ }])
  t.match(at(bad.problems, 'authorization_server.registration.extra'), [{ message: /unknown key/ }])
})

t.test('authorization_server.client_id_metadata_documents: off by default, rules', async (t) => {
  const base = (extra: string): string => `
authorization_server:
  scopes: { "mcp:tools": Use the tools }
${extra}
`
  t.equal(inspect(base('')).config?.authorizationServer?.clientIdMetadataDocuments, null)
  const on = inspect(base('  client_id_metadata_documents: { enabled: true, allow_hosts: [Clients.Internal, "[::1]"] }'))
  t.same(on.problems, [], describe(on.problems))
  t.same(on.config?.authorizationServer?.clientIdMetadataDocuments, {
    allowHosts: ['clients.internal', '[::1]'],
    caFile: null,
    scopes: ['openid', 'profile', 'email', 'offline_access', 'mcp:tools'],
  })
  const bad = inspect(base('  client_id_metadata_documents: { enabled: true, allow_hosts: ["https://x.example.com"], ca_file: missing.pem, scopes: [nope] }'))
  t.match(at(bad.problems, 'authorization_server.client_id_metadata_documents.allow_hosts[0]'), [{ message: /not a host name/ }])
  t.match(at(bad.problems, 'authorization_server.client_id_metadata_documents.ca_file'), [{ message: /file not found/ }])
  t.match(at(bad.problems, 'authorization_server.client_id_metadata_documents.scopes[0]'), [{ message: /unknown scope `nope`/ }])
})

t.test('approval: required and mcp.approvals (issue #41)', async (t) => {
  const ok = inspect(`
authorization_server:
  clients: []
approvals:
  notify: { url: "https://hooks.example.com/approvals", secret: "0123456789abcdef0123456789abcdef" }
  max_pending_per_person: 5
${route(`mcp:
  tools:
    delete_order: { scopes: [orders:write], approval: required }
    "refund_*": { approval: required }
    get_order: [orders:read]
  approvals: { ttl: 2m, reuse: ttl, acr: [mfa], max_age: 5m }`)}`)
  t.same(ok.problems, [], describe(ok.problems))
  t.same(ok.config?.routes[0]?.mcp?.approvalTools, ['delete_order', 'refund_*'])
  t.same(ok.config?.routes[0]?.mcp?.tools, { delete_order: ['orders:write'], get_order: ['orders:read'] })
  t.same(ok.config?.routes[0]?.mcp?.approvals, { ttlSec: 120, reuse: 'ttl', acr: ['mfa'], maxAgeSec: 300, notify: null })
  t.same(ok.config?.approvals, {
    notify: { url: 'https://hooks.example.com/approvals', secret: '0123456789abcdef0123456789abcdef' },
    maxPendingPerPerson: 5,
    maxPendingPerClient: 100,
  })

  const noAs = inspect(route('mcp: { tools: { delete_order: { approval: required } } }'))
  t.match(describe(noAs.problems), /approval: required. needs the .authorization_server/, 'no approval page without the authorization server')
  const wrong = inspect(`
authorization_server:
  clients: []
approvals: { notify: { url: "ftp://x", secret: short } }
${route('mcp: { tools: { delete_order: { approval: maybe } }, approvals: { reuse: twice } }')}`)
  const problems = describe(wrong.problems)
  t.match(problems, /approvals\.notify\.url/, 'an http(s) URL')
  t.match(problems, /at least 32 characters/, 'a secret long enough')
  t.match(problems, /delete_order\.approval/, 'approval is `required` or absent')
  t.match(problems, /approvals\.reuse/, 'reuse is once or ttl')
  t.equal(wrong.config, null)
})
