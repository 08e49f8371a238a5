import type { Config, ListenAddress } from '../config/validated-config.js'

/** What a reload can apply and what it leaves to a restart. */

function sameListen(a: ListenAddress | null, b: ListenAddress | null): boolean {
  return a?.host === b?.host && a?.port === b?.port
}

/**
 * Config keys a reload cannot apply (the process holds what they made: the
 * store connection, the listening sockets, an http or https server), by
 * their YAML names, for the warning that names them.
 */
export function keysNeedingRestart(old: Config, next: Config): string[] {
  const keys: string[] = []
  if (JSON.stringify(old.store) !== JSON.stringify(next.store)) keys.push('store')
  if (!sameListen(old.listen, next.listen)) keys.push('listen')
  if (!sameListen(old.adminListen, next.adminListen)) keys.push('admin_listen')
  // Certificate files are reloaded; turning TLS on or off needs another kind of server.
  if ((old.tls === null) !== (next.tls === null)) keys.push('tls')
  if (old.workers !== next.workers) keys.push('workers')
  // The HTTP/2 server and its SETTINGS are made at start.
  if (JSON.stringify(old.http2) !== JSON.stringify(next.http2)) keys.push('http2')
  if (JSON.stringify(old.traces) !== JSON.stringify(next.traces)) keys.push('telemetry')
  if (JSON.stringify(old.audit) !== JSON.stringify(next.audit)) keys.push('audit')
  return keys
}

/** A token is accepted up to clock_skew past its exp, so its revocation must outlive that too. */
export function revocationGraceSec(config: Config): number {
  return Math.max(60, config.gateway.clockSkewSec)
}
