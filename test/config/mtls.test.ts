import t from 'tap'
import { keysNeedingRestart } from '../../src/server/reload-rules.js'
import { at, describe, HASH, inspect } from './helpers.js'

/** Mutual TLS keys (RFC 8705, docs/fapi.md): `tls.client_ca`, the proxy header, the clients' certificate methods. */

const TLS = 'tls: { cert_file: files/cert.pem, key_file: files/key.pem, client_ca: files/ca.pem }\n'

const client = (lines: string): string => `authorization_server:
  clients:
    - client_id: svc
      type: confidential
      grant_types: [client_credentials]
${lines}
`

t.test('tls.client_ca asks for certificates, optional unless required', async (t) => {
  const optional = inspect(TLS)
  t.same(optional.problems, [], describe(optional.problems))
  t.match(optional.config?.tls, { clientCaFile: /ca\.pem$/, clientCertificates: 'optional' })
  const required = inspect('tls: { cert_file: files/cert.pem, key_file: files/key.pem, client_ca: files/ca.pem, client_certificates: required }\n')
  t.equal(required.config?.tls?.clientCertificates, 'required')
  t.equal(inspect('tls: { cert_file: files/cert.pem, key_file: files/key.pem }\n').config?.tls?.clientCertificates, 'off')
  const orphan = inspect('tls: { cert_file: files/cert.pem, key_file: files/key.pem, client_certificates: required }\n')
  t.match(at(orphan.problems, 'tls.client_certificates')[0]?.message, /needs `client_ca`/)
  const bad = inspect('tls: { cert_file: files/cert.pem, key_file: files/key.pem, client_ca: files/ca.pem, client_certificates: maybe }\n')
  t.equal(at(bad.problems, 'tls.client_certificates').length, 1)
})

t.test('gateway.client_certificate_header is a header name the gateway does not own', async (t) => {
  t.equal(inspect('gateway: { client_certificate_header: X-Forwarded-Client-Cert }\n').config?.gateway.clientCertificateHeader, 'X-Forwarded-Client-Cert')
  t.equal(inspect('store: memory\n').config?.gateway.clientCertificateHeader, null)
  for (const name of ['Authorization', 'Host', 'bad header', 'X-Forwarded-For']) {
    const r = inspect(`gateway: { client_certificate_header: "${name}" }\n`)
    t.equal(at(r.problems, 'gateway.client_certificate_header').length, 1, name)
  }
})

t.test('tls_client_auth: exactly one certificate name, no secret, a certificate source', async (t) => {
  const dn = inspect(TLS + client('      token_endpoint_auth_method: tls_client_auth\n      tls_client_auth_subject_dn: "CN=svc, O=Example"'))
  t.same(dn.problems, [], describe(dn.problems))
  const c = dn.config?.authorizationServer?.clients[0]
  t.equal(c?.tokenEndpointAuthMethod, 'tls_client_auth')
  t.match(c?.tlsClientAuth, { kind: 'subject_dn', value: 'CN=svc, O=Example' })
  t.equal(c?.secretHash, null)

  const ip = inspect(TLS + client('      token_endpoint_auth_method: tls_client_auth\n      tls_client_auth_san_ip: "2001:DB8:0:0::1"'))
  t.same(ip.config?.authorizationServer?.clients[0]?.tlsClientAuth, { kind: 'san_ip', value: '2001:db8::1' }, 'an IP address is read in its canonical form')
  const dns = inspect(TLS + client('      token_endpoint_auth_method: tls_client_auth\n      tls_client_auth_san_dns: Svc.Example.COM'))
  t.same(dns.config?.authorizationServer?.clients[0]?.tlsClientAuth, { kind: 'san_dns', value: 'svc.example.com' })

  const none = inspect(TLS + client('      token_endpoint_auth_method: tls_client_auth'))
  t.match(describe(none.problems), /exactly one of `tls_client_auth_subject_dn`/)
  const two = inspect(
    TLS +
      client('      token_endpoint_auth_method: tls_client_auth\n      tls_client_auth_san_dns: a.example\n      tls_client_auth_san_uri: https://a.example'),
  )
  t.match(describe(two.problems), /exactly one of/)
  const badDn = inspect(TLS + client('      token_endpoint_auth_method: tls_client_auth\n      tls_client_auth_subject_dn: "nonsense"'))
  t.match(describe(badDn.problems), /not an RFC 4514 distinguished name/)
  const badIp = inspect(TLS + client('      token_endpoint_auth_method: tls_client_auth\n      tls_client_auth_san_ip: 10.0.0'))
  t.match(describe(badIp.problems), /not an IPv4 or IPv6 address/)
  const secret = inspect(
    TLS + client(`      token_endpoint_auth_method: tls_client_auth\n      tls_client_auth_san_dns: a.example\n      secret_hash: "${HASH}"`),
  )
  t.match(describe(secret.problems), /authenticates with its key, not a secret/)
  const stray = inspect(TLS + client(`      secret_hash: "${HASH}"\n      tls_client_auth_san_dns: a.example`))
  t.match(describe(stray.problems), /is for `token_endpoint_auth_method: tls_client_auth` clients/)

  const nowhere = inspect(client('      token_endpoint_auth_method: tls_client_auth\n      tls_client_auth_san_dns: a.example'))
  t.match(describe(nowhere.problems), /no client certificate can reach bearward/)
  const proxied = inspect(
    `gateway: { client_certificate_header: X-Client-Cert, trusted_proxies: [10.0.0.1] }\n${client('      token_endpoint_auth_method: tls_client_auth\n      tls_client_auth_san_dns: a.example')}`,
  )
  t.same(proxied.problems, [], describe(proxied.problems))
})

t.test('self_signed_tls_client_auth needs inline jwks', async (t) => {
  const jwks = '{ keys: [{ kty: EC, crv: P-256, x: "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", y: "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0" }] }'
  const ok = inspect(TLS + client(`      token_endpoint_auth_method: self_signed_tls_client_auth\n      jwks: ${jwks}`))
  t.same(ok.problems, [], describe(ok.problems))
  const uri = inspect(TLS + client('      token_endpoint_auth_method: self_signed_tls_client_auth\n      jwks_uri: https://keys.example.com/jwks'))
  t.match(describe(uri.problems), /`jwks_uri` is not supported for it/)
})

t.test('bound tokens: a certificate or a DPoP key, not both; mtls_url is https on the same path', async (t) => {
  const both = inspect(
    TLS + client(`      secret_hash: "${HASH}"\n      dpop_bound_access_tokens: true\n      tls_client_certificate_bound_access_tokens: true`),
  )
  t.match(describe(both.problems), /not both/)
  const bound = inspect(TLS + client(`      secret_hash: "${HASH}"\n      tls_client_certificate_bound_access_tokens: true`))
  t.equal(bound.config?.authorizationServer?.clients[0]?.tlsClientCertificateBoundAccessTokens, true)

  const mtls = inspect(`public_url: https://as.example.com\n${TLS}authorization_server:\n  mtls_url: https://mtls.as.example.com/\n`)
  t.same(mtls.problems, [], describe(mtls.problems))
  t.equal(mtls.config?.authorizationServer?.mtlsUrl, 'https://mtls.as.example.com')
  const http = inspect(`${TLS}authorization_server:\n  mtls_url: http://mtls.as.example.com\n`)
  t.match(describe(http.problems), /use https/)
  const path = inspect(`public_url: https://as.example.com/auth\n${TLS}authorization_server:\n  mtls_url: https://mtls.as.example.com/other\n`)
  t.match(describe(path.problems), /must have the path of `public_url`/)
})

t.test('a reload applies client_ca and client_certificates; turning TLS on or off still needs a restart', async (t) => {
  const a = inspect(TLS).config
  const b = inspect('tls: { cert_file: files/cert.pem, key_file: files/key.pem, client_ca: files/ca.pem, client_certificates: required }\n').config
  if (a === null || b === null) throw new Error('configs should load')
  t.same(keysNeedingRestart(a, b), [])
})
