import type { AsContext } from '../context.js'
import { passkeyPageHeaders, passkeySignInOffered } from '../passkeys/page-headers.js'

/** How the login page offers sign-in: the local form (`local_login`), a passkey (`webauthn`) and a button per identity provider. */
export function loginChoices(as: AsContext): { localLogin: boolean; passkeys: boolean; providers: Array<{ id: string; name: string }> } {
  return { localLogin: as.as.localLogin, passkeys: passkeySignInOffered(as), providers: as.as.identityProviders.map((p) => ({ id: p.id, name: p.name })) }
}

/** The login page's headers: the passkey script's CSP added (to the page's own, when it has one) when passkeys are offered. */
export function loginHeaders(as: AsContext, headers: Readonly<Record<string, string>> | undefined): Readonly<Record<string, string>> | undefined {
  if (!passkeySignInOffered(as)) return headers
  return { ...headers, ...passkeyPageHeaders(as, headers?.['content-security-policy']) }
}
