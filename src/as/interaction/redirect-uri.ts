/**
 * Redirect URI matching at the authorization endpoint.
 *
 * RFC 9700 2.1 / 4.1.3 and docs/architecture.md "Redirect URIs and codes": the requested URI must
 * equal a registered one by exact string comparison: no prefix, wildcard,
 * case folding, trailing-slash or query tolerance. The one exception is RFC
 * 8252 7.3: for a registered loopback IP literal (`http://127.0.0.1`,
 * `http://[::1]`), the port may differ, because a native app picks a free port
 * at run time. `localhost` is not exempt (RFC 8252 8.3: it may resolve
 * elsewhere).
 */

/** Scheme and loopback IP literal, then an optional port, then the end of the authority. */
const LOOPBACK = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?(?=[/?#]|$)/

/** The URI with its port removed, when it is an http loopback IP literal URI; else null. */
function withoutLoopbackPort(uri: string): string | null {
  const m = LOOPBACK.exec(uri)
  if (m === null) return null
  const port = m[2]
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return null
  return `http://${m[1]}${uri.slice(m[0].length)}`
}

/**
 * The redirect URI to use, or null when the request must be refused without
 * redirecting (RFC 6749 4.1.2.1).
 *
 * @param registered the client's registered URIs
 * @param requested `redirect_uri` as sent, or undefined when omitted; it may be
 *   omitted only when exactly one URI is registered (RFC 6749 3.1.2.3)
 * @param variableLoopbackPort whether the loopback port exception applies:
 *   only for native applications, i.e. public clients (docs/architecture.md
 *   Authentication 7); a confidential web client's loopback URI is exact
 * @see https://www.rfc-editor.org/rfc/rfc8252#section-7.3
 */
export function matchRedirectUri(registered: readonly string[], requested: string | undefined, variableLoopbackPort: boolean): string | null {
  if (requested === undefined) return registered.length === 1 ? (registered[0] ?? null) : null
  if (registered.includes(requested)) return requested
  if (!variableLoopbackPort) return null
  const requestedBare = withoutLoopbackPort(requested)
  if (requestedBare === null) return null
  for (const uri of registered) {
    if (withoutLoopbackPort(uri) === requestedBare) return requested
  }
  return null
}

/**
 * Append parameters to a redirect URI, keeping its own query exactly as
 * registered (RFC 6749 3.1.2: "MUST retain" it) and placing them before any
 * fragment.
 */
export function appendQuery(uri: string, params: ReadonlyArray<readonly [string, string]>): string {
  const hash = uri.indexOf('#')
  const base = hash === -1 ? uri : uri.slice(0, hash)
  const encoded = params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')
  if (encoded === '') return base
  const q = base.indexOf('?')
  const sep = q === -1 ? '?' : q === base.length - 1 || base.endsWith('&') ? '' : '&'
  return base + sep + encoded
}
