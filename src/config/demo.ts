/**
 * The demo secrets shipped in config/gateway.yaml (`demo-secret` for the
 * confidential clients, `demo-password` for user `demo`). They are public, so
 * a config that still uses them gets a warning from every load and from
 * `bearward check-config`.
 */
export const DEMO_SECRET_HASHES: ReadonlyMap<string, string> = new Map([
  ['__DEMO_CLIENT_HASH__', 'demo-secret'],
  ['__DEMO_USER_HASH__', 'demo-password'],
])

/** The demo secret a hash belongs to, or undefined. */
export function demoSecretOf(hash: string): string | undefined {
  return DEMO_SECRET_HASHES.get(hash)
}
