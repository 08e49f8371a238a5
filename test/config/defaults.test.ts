import t from 'tap'
import { resolve } from 'node:path'
import { describe, HASH, inspect } from './helpers.js'
import { checkConfig } from '../../src/config/load.js'

const DEFAULT_IDENTITY_HEADERS = {
  subject: 'X-Auth-Subject',
  clientId: 'X-Auth-Client-Id',
  scope: 'X-Auth-Scope',
  issuer: 'X-Auth-Issuer',
  claims: {},
}

t.test('every default is applied', async (t) => {
  const yaml = `
authorization_server:
  clients:
    - client_id: web
      type: confidential
      secret_hash: "${HASH}"
      redirect_uris: [https://app.example.com/cb]
    - client_id: cli
      type: public
      redirect_uris: [http://127.0.0.1/cb]
  users:
    - username: alice
      password_hash: "${HASH}"
issuers:
  - id: corp
    issuer: https://idp.example.com
    jwks_uri: https://idp.example.com/jwks.json
routes:
  - name: orders
    match: { path: /orders }
    upstream: http://127.0.0.1:3000
`
  const { config, problems } = inspect(yaml)
  t.same(problems, [], describe(problems))
  t.same(config, {
    file: resolve('test/fixtures/config/good/inline.yaml'),
    listen: { host: '0.0.0.0', port: 8080 },
    adminListen: { host: '127.0.0.1', port: 9090 },
    publicUrl: 'http://localhost:8080',
    tls: null,
    store: { kind: 'memory' },
    log: { level: 'info', accessSub: true },
    audit: { kind: 'off' },
    approvals: { notify: null, maxPendingPerPerson: 20, maxPendingPerClient: 100 },
    trustIncomingRequestId: false,
    shutdownTimeoutMs: 10_000,
    clientTimeouts: { headersMs: 20_000, bodyIdleMs: 15_000, requestMs: 300_000, keepAliveMs: 65_000 },
    http2: {
      tls: false,
      cleartext: false,
      maxConcurrentStreams: 100,
      maxHeaderListBytes: 16384,
      maxResets: 200,
      maxResetsPerAddress: 400,
      resetWindowMs: 10_000,
    },
    authorizationServer: {
      keys: [],
      accessToken: { format: 'jwt', ttlSec: 600, claims: [] },
      refreshToken: { ttlSec: 30 * 86400 },
      idToken: { ttlSec: 3600 },
      codeTtlSec: 60,
      mtlsUrl: null,
      scopes: {
        openid: 'Sign you in with your account',
        profile: 'Read your basic profile (name)',
        email: 'Read your email address',
        offline_access: 'Keep access while you are not using the app',
        'ssf:stream': "Manage this application's stream of security events",
      },
      clients: [
        {
          clientId: 'web',
          name: 'web',
          metadata: { logoUri: null, policyUri: null, tosUri: null, postLogoutRedirectUris: [] },
          type: 'confidential',
          secretHash: HASH,
          tokenEndpointAuthMethod: 'client_secret_basic',
          redirectUris: ['https://app.example.com/cb'],
          grantTypes: ['authorization_code', 'refresh_token'],
          scopes: [],
          allowedOrigins: [],
          introspect: false,
          requirePkce: true,
          allowPlainPkce: false,
          skipConsent: false,
          rotateRefreshTokens: true,
          dpopBoundAccessTokens: false,
          tlsClientCertificateBoundAccessTokens: false,
        },
        {
          clientId: 'cli',
          name: 'cli',
          metadata: { logoUri: null, policyUri: null, tosUri: null, postLogoutRedirectUris: [] },
          type: 'public',
          secretHash: null,
          tokenEndpointAuthMethod: 'none',
          redirectUris: ['http://127.0.0.1/cb'],
          grantTypes: ['authorization_code', 'refresh_token'],
          scopes: [],
          allowedOrigins: [],
          introspect: false,
          requirePkce: true,
          allowPlainPkce: false,
          skipConsent: false,
          rotateRefreshTokens: true,
          dpopBoundAccessTokens: false,
          tlsClientCertificateBoundAccessTokens: false,
        },
      ],
      users: [{ username: 'alice', passwordHash: HASH, sub: 'alice', claims: {} }],
      localLogin: true,
      identityProviders: [],
      webauthn: { enabled: true, rpId: 'localhost', rpName: 'bearward', origins: ['http://localhost:8080'] },
      assertionIssuers: [],
      session: { ttlSec: 8 * 3600, factorChangeMaxAgeSec: 600 },
      consent: { remember: true, ttlSec: 30 * 86400 },
      rateLimit: {
        loginMaxFailures: 5,
        loginAddressMaxFailures: 20,
        loginDelayMaxSec: 60,
        knownBrowserTtlSec: 90 * 86400,
        clientAuthMaxFailures: 10,
        clientAuthAddressMaxFailures: 50,
        windowSec: 900,
        passkeyOptionsPerAddress: 100,
        ipv6Prefix: 64,
      },
      device: { ttlSec: 600, intervalSec: 5 },
      ciba: { ttlSec: 300, intervalSec: 5 },
      par: { required: false, requestUriTtlSec: 60 },
      profile: null,
      registration: null,
      clientIdMetadataDocuments: null,
    },
    issuers: [
      {
        id: 'corp',
        issuer: 'https://idp.example.com',
        jwksUri: 'https://idp.example.com/jwks.json',
        algorithms: ['RS256', 'ES256'],
        introspection: null,
        jwks: { minTtlSec: 300, maxTtlSec: 86400, cooldownSec: 30, staleSec: 86400, firstFetchWaitMs: 2000, timeoutMs: 5000 },
      },
    ],
    gateway: {
      realm: 'bearward',
      clockSkewSec: 30,
      tokenCacheMaxEntries: 10_000,
      introspectionCacheTtlSec: 60,
      introspectionNegativeTtlSec: 5,
      revocationResyncSec: 30,
      streamExpiryGraceSec: 30,
      identityHeaders: DEFAULT_IDENTITY_HEADERS,
      trustedProxies: [],
      clientCertificateHeader: null,
    },
    routes: [
      {
        name: 'orders',
        match: { path: '/orders', host: null, methods: null, caseInsensitive: false },
        upstream: 'http://127.0.0.1:3000',
        audience: 'http://localhost:8080',
        audiences: ['http://localhost:8080', 'http://localhost:8080/orders'],
        protectedResource: { resource: 'http://localhost:8080/orders', name: null, documentation: null },
        mcp: null,
        token: 'jwt',
        issuers: ['self'],
        scopes: {},
        authentication: {},
        public: false,
        stripPrefix: false,
        tokenInBody: false,
        tokenInQuery: false,
        passPreflight: false,
        preserveHost: false,
        forwardAuthorization: false,
        identityHeaders: DEFAULT_IDENTITY_HEADERS,
        timeouts: { connectMs: 5000, headersMs: 60_000, idleMs: 60_000 },
        maxBodyBytes: 10 * 1024 * 1024,
        upstreamCaFile: null,
        upstreamHttp2: false,
        upstreamPool: null,
        storeUnavailable: 'closed',
        realm: 'bearward',
        dpop: 'allowed',
        senderConstraint: 'optional',
        allowTrace: false,
        upstreamToken: null,
        limits: null,
        concurrency: null,
      },
    ],
    dpop: { algs: ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'RS256', 'PS256'], iatWindowSec: 60, iatLeewaySec: 5, nonce: null },
    workers: 1,
    traces: null,
    signals: null,
    adminApi: null,
  })
})

t.test('defaults that follow other settings', async (t) => {
  const yaml = `
listen: 127.0.0.1:7000
gateway:
  realm: corp
  identity_headers: { subject: X-User, claims: { email: X-Email } }
authorization_server: {}
routes:
  - name: a
    match: { path: /a }
    upstream: http://127.0.0.1:3000
    identity_headers: { scope: X-Scopes }
  - name: b
    match: { path: /b }
    upstream: http://127.0.0.1:3000
    identity_headers: { claims: { groups: X-Groups } }
`
  const { config, problems } = inspect(yaml)
  t.same(problems, [])
  t.equal(config?.publicUrl, 'http://localhost:7000', 'public_url follows the listen port')
  t.equal(config?.routes[0]?.audience, 'http://localhost:7000', 'audience defaults to public_url')
  t.equal(config?.routes[0]?.realm, 'corp', 'realm defaults to gateway.realm')
  t.same(config?.gateway.identityHeaders, { ...DEFAULT_IDENTITY_HEADERS, subject: 'X-User', claims: { email: 'X-Email' } })
  t.same(
    config?.routes[0]?.identityHeaders,
    { ...DEFAULT_IDENTITY_HEADERS, subject: 'X-User', scope: 'X-Scopes', claims: { email: 'X-Email' } },
    'a route overrides single headers and inherits the claim headers',
  )
  t.same(config?.routes[1]?.identityHeaders.claims, { groups: 'X-Groups' }, "a route's own claims replace the gateway's (whose headers are still stripped)")
})

t.test('admin_listen: null and false turn the admin listener off', async (t) => {
  t.equal(inspect('admin_listen: null\n').config?.adminListen, null)
  t.equal(inspect('admin_listen: false\n').config?.adminListen, null)
  t.equal(inspect('admin_listen:\n').config?.adminListen, null)
  t.same(inspect('admin_listen: "[::1]:0"\n').config?.adminListen, { host: '::1', port: 0 })
})

t.test('public_url loses its trailing slash and keeps its path', async (t) => {
  t.equal(inspect('public_url: https://auth.example.com/\n').config?.publicUrl, 'https://auth.example.com')
  t.equal(inspect('public_url: https://example.com/auth/\n').config?.publicUrl, 'https://example.com/auth')
})

t.test('store forms', async (t) => {
  t.same(inspect('store: memory\n').config?.store, { kind: 'memory' })
  t.same(inspect('store: redis://127.0.0.1:6399/1\n').config?.store, {
    kind: 'redis',
    url: 'redis://127.0.0.1:6399/1',
    cluster: [],
    keyPrefix: 'bw:',
    commandTimeoutMs: 1000,
    sentinels: [],
    sentinelName: 'mymaster',
    replicaWait: { replicas: 0, timeoutMs: 500 },
  })
  t.same(inspect('store: { url: "rediss://:pw@r:6380", cluster: [r1:7000, "[::1]:7001"], key_prefix: "x:", command_timeout: 200ms }\n').config?.store, {
    kind: 'redis',
    url: 'rediss://:pw@r:6380',
    cluster: ['r1:7000', '[::1]:7001'],
    keyPrefix: 'x:',
    commandTimeoutMs: 200,
    sentinels: [],
    sentinelName: 'mymaster',
    replicaWait: { replicas: 1, timeoutMs: 100 },
  })
  t.same(inspect('store: { sentinels: ["10.0.0.1:26379", "10.0.0.2:26379"], name: orders }\n').config?.store, {
    kind: 'redis',
    url: '',
    cluster: [],
    keyPrefix: 'bw:',
    commandTimeoutMs: 1000,
    sentinels: ['10.0.0.1:26379', '10.0.0.2:26379'],
    sentinelName: 'orders',
    replicaWait: { replicas: 1, timeoutMs: 500 },
  })
  t.same(inspect('store: { url: "redis://r:6379", replica_wait: { replicas: 2, timeout: 250ms } }\n').config?.store, {
    kind: 'redis',
    url: 'redis://r:6379',
    cluster: [],
    keyPrefix: 'bw:',
    commandTimeoutMs: 1000,
    sentinels: [],
    sentinelName: 'mymaster',
    replicaWait: { replicas: 2, timeoutMs: 250 },
  })
})

t.test('a pure gateway has no implicit issuers', async (t) => {
  const { config, problems } = inspect(`
routes:
  - name: docs
    match: { path: /docs }
    upstream: http://127.0.0.1:3001
    public: true
`)
  t.same(problems, [])
  t.equal(config?.authorizationServer, null)
  t.same(config?.routes[0]?.issuers, [])
})

t.test('the full fixture sets every key', async (t) => {
  const file = resolve('test/fixtures/config/good/full.yaml')
  const { config, problems } = await checkConfig(file, { CORP_SECRET: 'from-env' })
  t.same(problems, [], describe(problems))
  const files = resolve('test/fixtures/config/good/files')
  t.match(config, {
    listen: { host: '::1', port: 8443 },
    adminListen: { host: '127.0.0.1', port: 0 },
    publicUrl: 'https://auth.example.com',
    tls: { certFile: `${files}/cert.pem`, keyFile: `${files}/key.pem`, clientCaFile: `${files}/ca.pem`, clientCertificates: 'required' },
    store: {
      kind: 'redis',
      url: 'rediss://:pw@redis.internal:6380/2',
      cluster: ['redis-1.internal:6379', 'redis-2.internal:6379'],
      keyPrefix: 'bearward:',
      commandTimeoutMs: 250,
    },
    log: { level: 'debug', accessSub: false },
    audit: { kind: 'file', path: `${files}/audit.jsonl` },
    trustIncomingRequestId: true,
    shutdownTimeoutMs: 30_000,
    clientTimeouts: { headersMs: 5_000, bodyIdleMs: 2_000, requestMs: 120_000, keepAliveMs: 30_000 },
    http2: {
      tls: false,
      cleartext: false,
      maxConcurrentStreams: 100,
      maxHeaderListBytes: 16384,
      maxResets: 200,
      maxResetsPerAddress: 400,
      resetWindowMs: 10_000,
    },
    gateway: {
      realm: 'example',
      clockSkewSec: 60,
      tokenCacheMaxEntries: 500,
      introspectionCacheTtlSec: 30,
      introspectionNegativeTtlSec: 1,
      revocationResyncSec: 10,
      streamExpiryGraceSec: 5,
      identityHeaders: { subject: 'X-User', clientId: 'X-Client', scope: 'X-Scopes', issuer: 'X-Iss', claims: { email: 'X-Email' } },
      trustedProxies: ['10.0.0.0/8', '::1', '192.168.1.10'],
    },
  })
  const as = config?.authorizationServer
  t.same(as?.keys[0], { file: `${files}/signing.jwk` })
  t.match(as?.keys[1], { jwk: { kty: 'EC', kid: 'old' } })
  t.match(as, {
    accessToken: { format: 'opaque', ttlSec: 3600, claims: ['email', 'groups'] },
    refreshToken: { ttlSec: 14 * 86400 },
    idToken: { ttlSec: 1800 },
    codeTtlSec: 120,
    scopes: { openid: 'Log you in', 'orders:read': 'Read your orders', email: 'Read your email address' },
    session: { ttlSec: 3600 },
    consent: { remember: false, ttlSec: 7 * 86400 },
    rateLimit: {
      loginMaxFailures: 3,
      loginAddressMaxFailures: 30,
      loginDelayMaxSec: 120,
      knownBrowserTtlSec: 30 * 86400,
      clientAuthMaxFailures: 20,
      clientAuthAddressMaxFailures: 100,
      windowSec: 300,
      passkeyOptionsPerAddress: 40,
      ipv6Prefix: 56,
    },
    device: { ttlSec: 900, intervalSec: 10 },
    par: { required: true, requestUriTtlSec: 90 },
    registration: {
      initialAccessToken: 'registration-token-0123',
      scopes: ['orders:read'],
      clientTtlSec: 7 * 86400,
      maxClients: 500,
      perAddress: 5,
      windowSec: 600,
    },
    clientIdMetadataDocuments: { allowHosts: ['clients.internal'], caFile: `${files}/ca.pem`, scopes: ['orders:read'] },
    localLogin: true,
  })
  t.same(
    as?.identityProviders,
    [
      {
        id: 'corp',
        name: 'Corp SSO',
        issuer: 'https://sso.example.com',
        clientId: 'bearward',
        clientSecret: 'from-env',
        scopes: ['openid', 'profile', 'email', 'groups'],
        allowed: { emailDomains: ['example.com'], claim: { name: 'groups', values: ['staff', 'admins'] } },
        claims: { name: 'name', email: 'email', groups: 'groups' },
        acrValues: { 'urn:corp:loa:2': 'mfa' },
        backchannelLogout: false,
        onLogout: 'sessions',
        position: 'authorization_server.identity_providers[0]',
      },
      {
        id: 'dev',
        name: 'Local dev provider',
        issuer: 'http://127.0.0.1:4444/oidc',
        clientId: 'bearward-dev',
        clientSecret: null,
        scopes: ['openid', 'profile', 'email'],
        allowed: null,
        claims: { name: 'name', preferred_username: 'preferred_username', email: 'email', email_verified: 'email_verified' },
        acrValues: {},
        backchannelLogout: false,
        onLogout: 'sessions',
        position: 'authorization_server.identity_providers[1]',
      },
    ],
    'identity providers with their defaults',
  )
  t.same(as?.clients[0], {
    clientId: 'web',
    name: 'Web shop',
    rateLimits: { 'per-client': 1000 },
    metadata: {
      logoUri: 'https://shop.example.com/logo.png',
      policyUri: 'https://shop.example.com/privacy',
      tosUri: 'https://shop.example.com/terms',
      postLogoutRedirectUris: ['https://shop.example.com/bye', 'com.example.app:/signed-out'],
    },
    type: 'confidential',
    secretHash: 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    tokenEndpointAuthMethod: 'client_secret_post',
    redirectUris: ['https://shop.example.com/callback', 'com.example.app:/oauth2redirect'],
    grantTypes: ['authorization_code', 'refresh_token', 'client_credentials'],
    scopes: ['openid', 'profile', 'orders:read'],
    allowedOrigins: ['https://shop.example.com', 'http://localhost:3000'],
    introspect: true,
    requirePkce: false,
    allowPlainPkce: true,
    skipConsent: true,
    rotateRefreshTokens: false,
    dpopBoundAccessTokens: true,
    tlsClientCertificateBoundAccessTokens: false,
  })
  t.same(as?.clients[1]?.grantTypes, ['urn:ietf:params:oauth:grant-type:device_code'])
  t.match(as?.clients[2], {
    clientId: 'payments',
    tokenEndpointAuthMethod: 'tls_client_auth',
    tlsClientAuth: { kind: 'subject_dn', value: 'CN=payments,O=Example Bank,C=GB' },
    tlsClientCertificateBoundAccessTokens: true,
    secretHash: null,
  })
  t.equal(as?.mtlsUrl, 'https://mtls.auth.example.com')
  t.equal(config?.gateway.clientCertificateHeader, 'X-Forwarded-Client-Cert')
  t.same(as?.users[0], {
    username: 'alice',
    passwordHash: 'scrypt$16384$8$1$BBBBBBBBBBBBBBBBBBBBBB$BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB',
    sub: '248289761001',
    claims: { name: 'Alice', email: 'alice@example.com', groups: ['admins'] },
  })
  t.same(config?.issuers[0], {
    id: 'corp',
    issuer: 'https://idp.example.com',
    jwksUri: 'https://idp.example.com/jwks.json',
    algorithms: ['RS256', 'PS256', 'ES384', 'EdDSA'],
    introspection: { endpoint: 'https://idp.example.com/introspect', clientId: 'gw', clientSecret: 'from-env', timeoutMs: 500 },
    jwks: { minTtlSec: 60, maxTtlSec: 43200, cooldownSec: 10, staleSec: 3600, firstFetchWaitMs: 1000, timeoutMs: 3000 },
  })
  t.same(config?.routes[0], {
    name: 'orders',
    match: { path: '/orders', host: 'shop.example.com', methods: ['GET', 'POST', 'DELETE'], caseInsensitive: true },
    upstream: 'https://orders.internal:8443/v1',
    audience: 'https://orders.example.com',
    audiences: ['https://orders.example.com', 'https://auth.example.com/orders'],
    protectedResource: { resource: 'https://auth.example.com/orders', name: null, documentation: null },
    mcp: null,
    token: 'any',
    issuers: ['self', 'corp'],
    scopes: { GET: ['orders:read'], POST: ['orders:write'], '*': [] },
    authentication: {},
    public: false,
    stripPrefix: true,
    tokenInBody: true,
    tokenInQuery: true,
    passPreflight: true,
    preserveHost: true,
    forwardAuthorization: true,
    identityHeaders: { subject: 'X-Orders-User', clientId: 'X-Client', scope: 'X-Scopes', issuer: 'X-Iss', claims: { email: 'X-Email' } },
    timeouts: { connectMs: 2000, headersMs: 10_000, idleMs: 120_000 },
    maxBodyBytes: 512 * 1024,
    upstreamCaFile: `${files}/ca.pem`,
    upstreamHttp2: false,
    upstreamPool: null,
    storeUnavailable: 'open',
    realm: 'orders',
    allowTrace: true,
    dpop: 'allowed',
    senderConstraint: 'required',
    upstreamToken: null,
    limits: {
      rateLimits: [{ name: 'per-client', key: 'client', limit: 100, perMs: 60_000, burst: 20, onStoreFailure: 'deny', tool: null }],
      quotas: [{ name: 'daily', key: 'subject', limit: 10000, per: 'day', onStoreFailure: 'allow' }],
    },
    concurrency: null,
  })
  t.same(config?.dpop, { algs: ['ES256', 'EdDSA'], iatWindowSec: 120, iatLeewaySec: 10, nonce: { secret: '0123456789abcdef0123456789abcdef', ttlSec: 600 } })
  t.match(config?.routes[1], {
    name: 'root',
    match: { path: '/' },
    public: true,
    issuers: ['self'],
    protectedResource: null,
    audiences: ['https://auth.example.com'],
  })
  t.match(config?.routes[2], {
    name: 'mcp',
    audience: 'https://auth.example.com',
    audiences: ['https://auth.example.com', 'https://mcp.example.com/mcp'],
    protectedResource: { resource: 'https://mcp.example.com/mcp', name: 'Orders MCP', documentation: 'https://docs.example.com/mcp' },
    mcp: { tools: { delete_order: ['orders:write'], refund: ['orders:write', 'payments'] }, maxBodyBytes: 64 * 1024 },
    upstreamToken: { mode: 'assertion', audience: 'https://mcp-upstream.internal', scopes: ['orders:read'], lifetimeSec: 20, header: 'x-orders-assertion' },
  })
})
