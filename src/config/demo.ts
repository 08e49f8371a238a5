/**
 * The demo secrets shipped in config/gateway.yaml (`demo-secret` for the
 * confidential clients, `demo-password` for user `demo`). They are public, so
 * a config that still uses them gets a warning from every load and from
 * `bearward check-config`.
 */
export const DEMO_SECRET_HASHES: ReadonlyMap<string, string> = new Map([
  ['scrypt$16384$8$1$T_fa9RH8qvVUH6zmXvgxwg$5I6XnQ5GNOnSvh4hfIvI-IzxZqino7IpleF2VoTz-9U', 'demo-secret'],
  ['scrypt$16384$8$1$Xg4RwaADC0DMb75lzB2hIw$4DPebt_jLGmC_340SLD_j-d605lpJ8SBvJnUCSZrQT0', 'demo-password'],
])

/** The demo secret a hash belongs to, or undefined. */
export function demoSecretOf(hash: string): string | undefined {
  return DEMO_SECRET_HASHES.get(hash)
}

/** The environment variable that lets the demo secrets serve a network address. */
export const ALLOW_DEMO_ENV = 'BEARWARD_ALLOW_DEMO'

/** What still uses a demo secret: `client \`web\``, `user \`demo\``. */
export function demoSecretUsers(
  clients: readonly { clientId: string; secretHash: string | null }[],
  users: readonly { username: string; passwordHash: string }[],
): string[] {
  const found: string[] = []
  for (const c of clients) if (c.secretHash !== null && DEMO_SECRET_HASHES.has(c.secretHash)) found.push(`client \`${c.clientId}\``)
  for (const u of users) if (DEMO_SECRET_HASHES.has(u.passwordHash)) found.push(`user \`${u.username}\``)
  return found
}
