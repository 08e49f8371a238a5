import { configYaml, mergeConfig, type ConfigTree } from './config-tree.js'
import { testSecretHash } from './secret-hashes.js'

export const DEMO_SECRET = 'e2e-client-secret-value-0123456789abcdef'
export const DEMO_PASSWORD = 'correct horse battery staple'

let cached: Promise<{ secretHash: string; passwordHash: string }> | null = null

/** Hashes used by e2e configs (stored ones, secret-hashes.ts). */
export function demoHashes(): Promise<{ secretHash: string; passwordHash: string }> {
  cached ??= Promise.all([testSecretHash(DEMO_SECRET), testSecretHash(DEMO_PASSWORD)]).then(([secretHash, passwordHash]) => ({ secretHash, passwordHash }))
  return cached
}

/** The claims of the demo user alice. */
export const ALICE_CLAIMS: Readonly<ConfigTree> = { name: 'Alice Example', email: 'alice@example.com', email_verified: true }

/** The demo config's authorization_server section: its lists are typed so a test can add to them. */
export interface DemoAuthorizationServer extends ConfigTree {
  clients: ConfigTree[]
  users: ConfigTree[]
}

/** The demo config as data (see {@link asConfig}); any other top-level key may be added. */
export interface DemoConfig extends ConfigTree {
  authorization_server: DemoAuthorizationServer
  routes: ConfigTree[]
}

export interface AsConfigOptions {
  port: number
  upstream: string
  /** `store:` as a Redis URL, `memory` (the default) or the map form (`{ url, key_prefix }`). */
  store?: string | ConfigTree
  format?: 'jwt' | 'opaque'
  /** Routes after the demo's `orders` route. */
  routes?: ConfigTree[]
  /** Merged over the demo config (maps key by key; lists and scalars replace). */
  override?: ConfigTree
}

/**
 * A config with the authorization server and one protected route, as users
 * write it: a confidential web client, a public CLI client (device grant), a
 * service client, one user. Returned as data for a test to change by key;
 * {@link asConfigYaml} writes it out.
 */
export async function asConfig(o: AsConfigOptions): Promise<DemoConfig> {
  const { secretHash, passwordHash } = await demoHashes()
  const config: DemoConfig = {
    listen: `127.0.0.1:${o.port}`,
    admin_listen: '127.0.0.1:0',
    public_url: `http://127.0.0.1:${o.port}`,
    store: o.store ?? 'memory',
    log: { level: 'info' },
    authorization_server: {
      access_token: { format: o.format ?? 'jwt', ttl: '10m' },
      scopes: { 'orders:read': 'Read your orders', 'orders:write': 'Change your orders' },
      clients: [
        {
          client_id: 'web',
          name: 'Example Web App',
          type: 'confidential',
          secret_hash: secretHash,
          redirect_uris: ['http://127.0.0.1:5555/callback'],
          grant_types: ['authorization_code', 'refresh_token'],
          scopes: ['openid', 'profile', 'email', 'orders:read', 'orders:write'],
        },
        {
          client_id: 'cli',
          name: 'Example CLI',
          type: 'public',
          redirect_uris: ['http://127.0.0.1/callback'],
          grant_types: ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'],
          scopes: ['openid', 'orders:read'],
        },
        {
          client_id: 'service',
          type: 'confidential',
          secret_hash: secretHash,
          grant_types: ['client_credentials'],
          scopes: ['orders:read'],
          introspect: true,
        },
      ],
      users: [
        {
          username: 'alice',
          password_hash: passwordHash,
          claims: { ...ALICE_CLAIMS },
        },
      ],
    },
    routes: [
      {
        name: 'orders',
        match: { path: '/orders' },
        upstream: o.upstream,
        token: o.format === 'opaque' ? 'any' : 'jwt',
        scopes: { GET: ['orders:read'], POST: ['orders:write'] },
      },
      ...(o.routes ?? []),
    ],
  }
  return o.override ? mergeConfig(config, o.override) : config
}

/** The client `clientId` of a demo config, to change by key; throws when there is none. */
export function demoClient(config: DemoConfig, clientId: string): ConfigTree {
  const client = config.authorization_server.clients.find((c) => c.client_id === clientId)
  if (client === undefined) throw new Error(`no client ${clientId} in the config`)
  return client
}

/** The user `username` of a demo config, to change by key; throws when there is none. */
export function demoUser(config: DemoConfig, username: string): ConfigTree {
  const user = config.authorization_server.users.find((u) => u.username === username)
  if (user === undefined) throw new Error(`no user ${username} in the config`)
  return user
}

/**
 * The override that makes several instances one authorization server, as a
 * deployment behind a load balancer is: one public_url (the issuer every
 * token names, the first instance's address) and one signing key file.
 */
export function oneIssuer(publicPort: number, keyFile: string): ConfigTree {
  return { public_url: `http://127.0.0.1:${publicPort}`, authorization_server: { keys: [{ file: keyFile }] } }
}

/** {@link asConfig} as the YAML file bearward reads. */
export async function asConfigYaml(o: AsConfigOptions): Promise<string> {
  return configYaml(await asConfig(o))
}
