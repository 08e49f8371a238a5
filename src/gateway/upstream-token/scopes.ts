/**
 * `exp` of a signed upstream credential: `lifetimeSec` after `iat`, and
 * never later than the client token's own `exp` (when it has a usable one).
 */
export function cappedExp(iat: number, lifetimeSec: number, tokenExp: number): number {
  const own = iat + lifetimeSec
  return Number.isFinite(tokenExp) && tokenExp < own ? tokenExp : own
}

/**
 * The scopes a signed upstream credential carries: the client token's
 * scopes that the route allows the upstream to see (`upstream_scopes`, by
 * default every scope the route requires), in the token's order. Never more
 * than the client was granted, never more than the upstream needs.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8693#section-2.1 (a narrowed scope)
 */
export function narrowedScope(granted: readonly string[], allowed: ReadonlySet<string>): string {
  let out = ''
  for (const scope of granted) {
    if (!allowed.has(scope)) continue
    out = out === '' ? scope : `${out} ${scope}`
  }
  return out
}
