import { hashSecret } from '../../src/crypto/secret.js'

export const DEMO_SECRET = 'e2e-client-secret-value-0123456789abcdef'
export const DEMO_PASSWORD = 'correct horse battery staple'

let cached: Promise<{ secretHash: string; passwordHash: string }> | null = null

/** Hashes used by e2e configs (computed once per test process). */
export function demoHashes(): Promise<{ secretHash: string; passwordHash: string }> {
  cached ??= Promise.all([hashSecret(DEMO_SECRET), hashSecret(DEMO_PASSWORD)]).then(([secretHash, passwordHash]) => ({ secretHash, passwordHash }))
  return cached
}

export interface AsConfigOptions {
  port: number
  upstream: string
  store?: string
  format?: 'jwt' | 'opaque'
  extra?: string
}

/**
 * A config with the authorization server and one protected route, as users
 * write it: a confidential web client, a public CLI client (device grant), a
 * service client, one user.
 */
export async function asConfigYaml(o: AsConfigOptions): Promise<string> {
  const { secretHash, passwordHash } = await demoHashes()
  return `
listen: 127.0.0.1:${o.port}
admin_listen: 127.0.0.1:0
public_url: http://127.0.0.1:${o.port}
store: ${o.store ?? 'memory'}
log: { level: info }
authorization_server:
  access_token: { format: ${o.format ?? 'jwt'}, ttl: 10m }
  scopes:
    "orders:read": Read your orders
    "orders:write": Change your orders
  clients:
    - client_id: web
      name: Example Web App
      type: confidential
      secret_hash: "${secretHash}"
      redirect_uris: [http://127.0.0.1:5555/callback]
      grant_types: [authorization_code, refresh_token]
      scopes: [openid, profile, email, orders:read, orders:write]
    - client_id: cli
      name: Example CLI
      type: public
      redirect_uris: [http://127.0.0.1/callback]
      grant_types: [authorization_code, refresh_token, "urn:ietf:params:oauth:grant-type:device_code"]
      scopes: [openid, orders:read]
    - client_id: service
      type: confidential
      secret_hash: "${secretHash}"
      grant_types: [client_credentials]
      scopes: [orders:read]
      introspect: true
  users:
    - username: alice
      password_hash: "${passwordHash}"
      claims: { name: Alice Example, email: alice@example.com, email_verified: true }
routes:
  - name: orders
    match: { path: /orders }
    upstream: ${o.upstream}
    token: ${o.format === 'opaque' ? 'any' : 'jwt'}
    scopes: { GET: [orders:read], POST: [orders:write] }
${o.extra ?? ''}
`
}
