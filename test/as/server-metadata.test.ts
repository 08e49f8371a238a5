import t from 'tap'
import { metadataDocument } from '../../src/as/server-metadata.js'
import { send, startAs } from '../helpers/as-back.js'

t.test('metadata documents', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())

  for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
    t.test(path, async (t) => {
      const r = await send(`${h.url}${path}`, { headers: { origin: 'https://anywhere.example' } })
      t.equal(r.status, 200)
      t.equal(r.headers.get('content-type'), 'application/json')
      t.equal(r.headers.get('cache-control'), 'public, max-age=300')
      t.equal(r.headers.get('access-control-allow-origin'), '*')
      t.equal(r.headers.get('access-control-allow-credentials'), null)
      const m = r.json ?? {}
      t.equal(m.issuer, h.issuer, 'issuer is exactly public_url')
      t.same(
        {
          authorization_endpoint: m.authorization_endpoint,
          token_endpoint: m.token_endpoint,
          jwks_uri: m.jwks_uri,
          userinfo_endpoint: m.userinfo_endpoint,
          revocation_endpoint: m.revocation_endpoint,
          introspection_endpoint: m.introspection_endpoint,
          device_authorization_endpoint: m.device_authorization_endpoint,
          end_session_endpoint: m.end_session_endpoint,
        },
        {
          authorization_endpoint: `${h.issuer}/authorize`,
          token_endpoint: `${h.issuer}/token`,
          jwks_uri: `${h.issuer}/jwks.json`,
          userinfo_endpoint: `${h.issuer}/userinfo`,
          revocation_endpoint: `${h.issuer}/revoke`,
          introspection_endpoint: `${h.issuer}/introspect`,
          device_authorization_endpoint: `${h.issuer}/device_authorization`,
          end_session_endpoint: `${h.issuer}/logout`,
        },
      )
      t.same(m.response_types_supported, ['code'])
      t.same(m.response_modes_supported, ['query'])
      t.same(m.grant_types_supported, ['authorization_code', 'refresh_token', 'client_credentials', 'urn:ietf:params:oauth:grant-type:device_code'])
      t.notOk((m.grant_types_supported as string[]).includes('password'))
      t.same(m.token_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'])
      t.same(m.revocation_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'])
      t.same(m.introspection_endpoint_auth_methods_supported, ['client_secret_basic', 'client_secret_post', 'private_key_jwt'])
      // RFC 7523 2.2: asymmetric algorithms only; none and HMAC are never accepted for an assertion.
      const assertionAlgs = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']
      t.same(m.token_endpoint_auth_signing_alg_values_supported, assertionAlgs)
      t.same(m.revocation_endpoint_auth_signing_alg_values_supported, assertionAlgs)
      t.same(m.introspection_endpoint_auth_signing_alg_values_supported, assertionAlgs)
      t.equal(m.authorization_response_iss_parameter_supported, true)
      t.same(m.subject_types_supported, ['public'])
      t.same(m.id_token_signing_alg_values_supported, ['ES256'])
      t.equal(m.request_uri_parameter_supported, false)
      t.same(m.scopes_supported, ['openid', 'profile', 'email', 'offline_access', 'orders:read', 'orders:write'])
      for (const c of ['sub', 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'name', 'email', 'email_verified']) {
        t.ok((m.claims_supported as string[]).includes(c), `claims_supported has ${c}`)
      }
      // One registered client (legacy) allows plain, so it is advertised after S256.
      t.same(m.code_challenge_methods_supported, ['S256', 'plain'])
    })
  }

  t.test('S256 only when no client allows plain', async (t) => {
    const clients = h.as.as.clients.map((c) => ({ ...c, allowPlainPkce: false }))
    const doc = metadataDocument({ ...h.as, as: { ...h.as.as, clients } })
    t.same(doc.code_challenge_methods_supported, ['S256'])
  })

  t.test('HEAD has the headers without a body; POST is 405', async (t) => {
    const head = await send(`${h.url}/.well-known/openid-configuration`, { method: 'HEAD' })
    t.equal(head.status, 200)
    t.equal(head.text, '')
    const post = await send(`${h.url}/.well-known/openid-configuration`, { method: 'POST' })
    t.equal(post.status, 405)
    t.equal(post.headers.get('allow'), 'GET, HEAD')
  })

  t.test('a preflight from any origin is allowed', async (t) => {
    const r = await send(`${h.url}/.well-known/oauth-authorization-server`, {
      method: 'OPTIONS',
      headers: { origin: 'https://anywhere.example', 'access-control-request-method': 'GET' },
    })
    t.equal(r.status, 204)
    t.equal(r.headers.get('access-control-allow-origin'), '*')
  })
})
