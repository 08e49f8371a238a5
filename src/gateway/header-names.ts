/**
 * Header names as the gateway compares them: lower-cased, with `_` mapped to
 * `-`. Many upstream stacks (CGI-style environments, nginx with
 * `underscores_in_headers`) treat `X_Auth_Subject` and `X-Auth-Subject` as the
 * same variable, so a client-sent underscore variant could otherwise smuggle
 * an identity past us.
 */

/** Lower-case and map `_` to `-`: the name an upstream may read a header as. */
export function canonicalHeaderName(name: string): string {
  const lower = name.toLowerCase()
  return lower.includes('_') ? lower.replaceAll('_', '-') : lower
}

/**
 * Header names listed in a Connection header (RFC 9110 7.6.1), canonical.
 * null in the common case (`keep-alive`, `close`, `upgrade`, absent), so the
 * hot path allocates nothing.
 */
export function connectionNamed(value: string | readonly string[] | undefined): Set<string> | null {
  if (value === undefined) return null
  const joined = typeof value === 'string' ? value : value.join(',')
  if (joined.length <= 10) {
    const lower = joined.toLowerCase()
    if (lower === 'keep-alive' || lower === 'close' || lower === 'upgrade' || lower === '') return null
  }
  let names: Set<string> | null = null
  for (const token of joined.split(',')) {
    const name = canonicalHeaderName(token.trim())
    if (name === '' || name === 'close' || name === 'keep-alive' || name === 'upgrade') continue
    ;(names ??= new Set()).add(name)
  }
  return names
}
