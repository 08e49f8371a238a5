/**
 * Scope values (RFC 6749 3.3): a space-delimited, case-sensitive list of
 * scope-tokens whose order does not matter.
 */
import { InvalidScope } from '../errors.js'
import { SCOPE_TOKEN } from '../config/values.js'
import type { ClientConfig } from '../config/validated-config.js'

/** Scopes the OpenID Connect layer defines; always known to the server (OIDC Core 5.4, 11). */
export const OIDC_SCOPES: readonly string[] = ['openid', 'profile', 'email', 'offline_access']

/**
 * The protocol scopes the metadata advertises (`scopes_supported`) that a
 * client describing itself (RFC 7591 registration, a Client ID Metadata
 * Document) may always ask for, besides the operator's list: `openid` (an ID
 * token naming the person, OIDC Core 3.1.2.1) and `offline_access` (a
 * refresh token, OIDC Core 11). Stock MCP clients add `offline_access` to the
 * scope they register with whenever the metadata lists it. `profile` and
 * `email` release the person's data, so they stay the operator's to open.
 */
const SELF_DESCRIBED_CLIENT_PROTOCOL_SCOPES: readonly string[] = ['openid', 'offline_access']

/** The most a self-described client may ask for: the configured scopes and the protocol scopes above. */
export function selfDescribedClientScopes(configured: readonly string[]): string[] {
  return [...new Set([...configured, ...SELF_DESCRIBED_CLIENT_PROTOCOL_SCOPES])]
}

/**
 * Split a scope parameter into its distinct tokens, in first-seen order.
 * A token outside the RFC 6749 3.3 grammar is `invalid_scope`.
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-3.3
 */
export function parseScope(value: string | undefined): string[] {
  if (value === undefined) return []
  const out: string[] = []
  for (const token of value.split(' ')) {
    if (token === '') continue
    if (!SCOPE_TOKEN.test(token)) throw new InvalidScope('The scope parameter is malformed')
    if (!out.includes(token)) out.push(token)
  }
  return out
}

/** The wire form of a scope list. */
export function formatScope(scopes: readonly string[]): string {
  return scopes.join(' ')
}

/** True when every scope of `requested` is in `allowed`. */
export function isSubset(requested: readonly string[], allowed: readonly string[]): boolean {
  const set = new Set(allowed)
  return requested.every((s) => set.has(s))
}

/**
 * invalid_scope unless every requested scope is allowed; the description names the first one that is
 * not (issue #42: the client's developer sees which). Scope tokens passed parseScope's character
 * check, so they are safe in error_description; a long one is cut.
 */
export function requireSubset(requested: readonly string[], allowed: readonly string[], exceeds: string): void {
  const set = new Set(allowed)
  const fault = requested.find((s) => !set.has(s))
  if (fault === undefined) return
  throw new InvalidScope(`The requested scope \`${scopeForDescription(fault)}\` exceeds ${exceeds}`)
}

/** A scope token as an error_description names it: cut when long (its characters passed SCOPE_TOKEN). */
export function scopeForDescription(scope: string): string {
  return scope.length > 64 ? `${scope.slice(0, 64)}…` : scope
}

/** True when the space-separated `scope` contains `name`. */
export function hasScope(scope: string, name: string): boolean {
  return scope.split(' ').includes(name)
}

/**
 * The scope a client asks for at the token or device authorization endpoint
 * (client_credentials, device_code). Absent: the client's registered scopes
 * minus `excluded` (RFC 6749 3.3 lets the server apply a documented default).
 * Anything beyond the registration is `invalid_scope`.
 */
export function requestedClientScope(value: string | undefined, client: ClientConfig, excluded: readonly string[] = []): string[] {
  const requested = parseScope(value)
  if (requested.length === 0) return client.scopes.filter((s) => !excluded.includes(s))
  if (requested.some((s) => excluded.includes(s))) {
    throw new InvalidScope('The requested scope is not available for this grant type')
  }
  requireSubset(requested, client.scopes, 'what the client is registered for')
  return requested
}
