// bearward configs for the scenarios, in the README's snake_case keys.
import { writeFileSync } from 'node:fs'
import { hashSecret } from './bearward.mjs'

export const SCOPE = 'orders:read'
export const CLIENT_ID = 'bench-service'
export const CLIENT_SECRET = 'bench-secret-0123456789-abcdefghijklmnopqrstuvwxyz'

/**
 * An AS + gateway config: one ES256 key from `keyFile`, a confidential
 * client_credentials client, `extraClients`, and `routes` to `upstream`.
 */
export async function gatewayConfig({ publicUrl, keyFile, store = 'memory', accessFormat = 'jwt', routes, extraClients = [] }) {
  return {
    public_url: publicUrl,
    store,
    authorization_server: {
      keys: [{ file: keyFile }],
      access_token: { format: accessFormat, ttl: '1h' },
      refresh_token: { ttl: '30d' },
      scopes: { [SCOPE]: 'Read orders' },
      clients: [
        {
          client_id: CLIENT_ID,
          type: 'confidential',
          secret_hash: await hashSecret(CLIENT_SECRET),
          grant_types: ['client_credentials'],
          scopes: [SCOPE],
        },
        ...extraClients,
      ],
    },
    routes,
  }
}

/** A route in config form. */
export function route(name, path, upstream, extra = {}) {
  return { name, match: { path }, upstream, ...extra }
}

export function writeJson(file, value) {
  writeFileSync(file, JSON.stringify(value))
  return file
}

export function basic(id = CLIENT_ID, secret = CLIENT_SECRET) {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`
}
