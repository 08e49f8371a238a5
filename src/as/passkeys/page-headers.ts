import { PAGE_HEADERS } from '../../http/reply.js'
import type { AsContext } from '../context.js'

/** Characters a CSP source expression's path may hold as they are (RFC 3986 path characters without `;` and `,`). */
const CSP_SAFE_URL = /^https?:\/\/[A-Za-z0-9.:[\]-]+(\/[A-Za-z0-9._~!$&'()*+=:@%/-]*)?$/

/**
 * The CSP of a page that loads the passkey script: the pages' policy plus
 * that one script and the one endpoint it calls, each named by its full URL,
 * so no other script (an upstream's file served on the same origin through
 * the gateway, say) could run and nothing else could be fetched. `base`: the
 * page's policy when it already differs (a client logo's img-src). A
 * public_url a source expression cannot hold exactly falls back to 'self'.
 * @see https://www.w3.org/TR/CSP3/#match-paths
 */
export function passkeyPageHeaders(as: AsContext, base = PAGE_HEADERS['content-security-policy']): Record<string, string> {
  const exact = CSP_SAFE_URL.test(as.issuer)
  const script = exact ? `${as.issuer}/assets/passkeys.js` : "'self'"
  const connect = exact ? `${as.issuer}/passkey-options` : "'self'"
  return { 'content-security-policy': `${base}; script-src ${script}; connect-src ${connect}` }
}

/** Passkey sign-in is offered on the login page: on, with the password form, and some local user to sign in (YAML, or people the admin API may create). */
export function passkeySignInOffered(as: AsContext): boolean {
  return as.as.webauthn.enabled && as.as.localLogin && (as.users.size > 0 || (as.config.adminApi ?? null) !== null)
}
