import type { AsContext } from '../context.js'
import { passkeySignInOffered } from '../passkeys/page-headers.js'

/**
 * Setting up a first second factor on the way to an authorization or a
 * device approval that needs one (`mfa.required`, the client's
 * `require_mfa`, or `acr_values` naming `mfa` or `phr`), where `mfa.methods`
 * offers it: the account page's set-up (`/account?mfa=setup&...`), which
 * leads back. A person's first factor is the one change a password-only
 * session may make (factors.ts).
 */

function methods(as: AsContext): ReadonlyArray<'passkey' | 'totp'> {
  return as.as.mfa?.methods ?? ['passkey', 'totp']
}

/** An authenticator app can be set up here: `mfa.methods` offers it (and people sign in with a password here). */
export function totpSetUpOffered(as: AsContext): boolean {
  return as.as.localLogin && methods(as).includes('totp')
}

/** A passkey can be added here as a second factor: passkeys are on and `mfa.methods` offers them. */
function passkeySetUpOffered(as: AsContext): boolean {
  return passkeySignInOffered(as) && methods(as).includes('passkey')
}

/**
 * Where a local person without a second factor sets one up that meets
 * `level` (`mfa`: an authenticator app or a passkey; `phr`: a passkey), with
 * what to come back to; null when nothing offered here meets it.
 */
export function enrolmentPath(as: AsContext, level: 'mfa' | 'phr', back: { request: string } | { userCode: string }): string | null {
  const carry = 'request' in back ? `request=${encodeURIComponent(back.request)}` : `user_code=${encodeURIComponent(back.userCode)}`
  if (level === 'mfa' && totpSetUpOffered(as)) return `account?mfa=setup&${carry}#totp`
  if (passkeySetUpOffered(as)) return `account?mfa=passkey&${carry}`
  return null
}
