/**
 * The demo secrets shipped in config/gateway.yaml (`demo-secret` for the
 * confidential clients, `demo-password` for user `demo`). They are public, so
 * a config that still uses them gets a warning from every load and from
 * `bearward check-config`.
 *
 * A hash is recognised by what it verifies, not by its text: the verifier
 * reads N, r and p as numbers (`016384` is 16384) and the salt and hash as
 * base64url (the last character's spare bits ignored), so each is compared
 * in its one canonical spelling.
 */
import { parseSecretHash } from '../crypto/secret.js'
import { isLoopbackHost } from './listen.js'

export const DEMO_SECRET_HASHES: ReadonlyMap<string, string> = new Map([
  ['scrypt$16384$8$1$T_fa9RH8qvVUH6zmXvgxwg$5I6XnQ5GNOnSvh4hfIvI-IzxZqino7IpleF2VoTz-9U', 'demo-secret'],
  ['scrypt$16384$8$1$Xg4RwaADC0DMb75lzB2hIw$4DPebt_jLGmC_340SLD_j-d605lpJ8SBvJnUCSZrQT0', 'demo-password'],
])

/** `hash` as `bearward hash-secret` writes it, or itself when it does not parse (then it verifies nothing). */
function canonicalHash(hash: string): string {
  const parsed = parseSecretHash(hash)
  if (parsed === null) return hash
  return ['scrypt', parsed.N, parsed.r, parsed.p, parsed.salt.toString('base64url'), parsed.hash.toString('base64url')].join('$')
}

/** The demo secret a hash belongs to, or undefined. */
export function demoSecretOf(hash: string): string | undefined {
  return DEMO_SECRET_HASHES.get(canonicalHash(hash))
}

/** The environment variable that lets the demo secrets serve a network address. */
export const ALLOW_DEMO_ENV = 'BEARWARD_ALLOW_DEMO'

/** What still uses a demo secret: `client \`web\``, `user \`demo\``. */
function demoSecretUsers(
  clients: readonly { clientId: string; secretHash: string | null }[],
  users: readonly { username: string; passwordHash: string }[],
): string[] {
  const found: string[] = []
  for (const c of clients) if (c.secretHash !== null && demoSecretOf(c.secretHash) !== undefined) found.push(`client \`${c.clientId}\``)
  for (const u of users) if (demoSecretOf(u.passwordHash) !== undefined) found.push(`user \`${u.username}\``)
  return found
}

/**
 * Why serving `host` with these clients and users is refused, or null: a demo
 * secret on an address other than loopback, unless `allowDemo` (the
 * environment's BEARWARD_ALLOW_DEMO) is `1`. Judged at load against the
 * config's `listen`, and at a reload against the address the process
 * actually serves (a reload cannot move the socket, src/server/reload-rules.ts).
 */
export function demoOnNetworkRefusal(
  host: string,
  as: { clients: readonly { clientId: string; secretHash: string | null }[]; users: readonly { username: string; passwordHash: string }[] } | null,
  allowDemo: string | undefined,
): string | null {
  if (as === null || isLoopbackHost(host) || allowDemo === '1') return null
  const users = demoSecretUsers(as.clients, as.users)
  if (users.length === 0) return null
  return (
    `${users.join(', ')} still use${users.length === 1 ? 's' : ''} a public DEMO secret, and \`${host}\` serves the network: ` +
    `replace the secrets (printf '%s' NEW_SECRET | bearward hash-secret), listen on 127.0.0.1, or set ${ALLOW_DEMO_ENV}=1 to serve the demo anyway`
  )
}
