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
