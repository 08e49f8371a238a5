import { clientLogo, isolated, type ClientView } from './client.js'
import { html } from './html.js'
import { hiddenFields, renderPage } from './layout.js'

export interface LogoutConfirmOptions {
  /** The application that asked, when one did. */
  client: ClientView | null
  signedInAs: string
  /** The session's CSRF token. */
  csrf: string
  /** What the confirmation carries back: client_id, post_logout_redirect_uri, state. */
  continuation: Readonly<Record<string, string>>
}

/**
 * "Sign out?": shown when a sign-out request cannot be tied to this browser's
 * session (no ID token of the signed-in person), and to a person who opened
 * the sign-out page directly. Signing out is a POST with the session's CSRF
 * token, so a link on another site can never sign anyone out by itself.
 */
export function logoutConfirmPage(o: LogoutConfirmOptions): string {
  const logo = o.client === null ? '' : clientLogo(o.client)
  const body = html`${logo === '' ? '' : html`<div class="client-head">${logo}<span class="client">${o.client === null ? '' : isolated(o.client.name)}</span></div>\n`}<h1>Sign out?</h1>
<p class="lead">${o.client === null ? '' : html`<span class="client">${isolated(o.client.name)}</span> asks to sign you out. `}You are signed in as <strong>${o.signedInAs}</strong>.</p>
<form method="post" action="logout">
${hiddenFields({ csrf: o.csrf, ...o.continuation })}<div class="actions">
<button class="primary" type="submit" name="decision" value="logout">Sign out</button>
<button class="secondary" type="submit" name="decision" value="stay">Stay signed in</button>
</div>
</form>
<p class="fine">Signing out ends your session here. Applications you allowed keep their access until you withdraw it on <a href="account">your account page</a>.</p>`
  return renderPage('Sign out', body)
}

/**
 * After signing out, for a person who is not sent back to an application; `everywhere` after "Sign
 * out everywhere" (every session of the person ended, on every device).
 */
export function signedOutPage(everywhere = false): string {
  const body = html`<h1>Signed out</h1>
<p class="notice" role="status">${everywhere ? 'You have signed out everywhere: on this device and every other one.' : 'You have signed out.'}</p>
<p class="lead">You can close this page.</p>
<p><a href="account">Sign in again</a></p>`
  return renderPage('Signed out', body)
}
