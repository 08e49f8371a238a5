import { html, type SafeHtml } from './html.js'
import { hiddenFields, renderPage } from './layout.js'
import { passkeyScript, passkeySignIn } from './passkeys.js'

export interface LoginPageOptions {
  /** What the sign-in is for, e.g. "to continue to <b>App</b>". */
  purpose: SafeHtml
  /** Pre-session CSRF token (double-submit with the cookie). */
  csrf: string
  /** The pending request to continue after login (`request` or `user_code`). */
  continuation: Readonly<Record<string, string>>
  /** Prefill (login_hint, or what was typed before a failure). */
  username?: string
  /** Message shown above the form. */
  error?: string
  /** Show the username/password form (`local_login`, default true). */
  localLogin?: boolean
  /** Offer a passkey: the button and the username field's autofill (the passkey script; its CSP header is the caller's). */
  passkeys?: boolean
  /** Upstream identity providers: a "Continue with <name>" button each. */
  providers?: ReadonlyArray<{ id: string; name: string }>
}

/**
 * One form per provider: a POST (CSRF token checked) to `upstream-login`,
 * carrying what the sign-in continues, so the provider's answer can resume it.
 */
function providerButtons(o: LoginPageOptions): SafeHtml {
  const providers = o.providers ?? []
  return html`${providers.map(
    (p) => html`<form class="provider" method="post" action="upstream-login">
${hiddenFields({ csrf: o.csrf, provider: p.id, ...o.continuation })}<div class="actions">
<button class="${o.localLogin === false ? 'primary' : 'secondary'}" type="submit">Continue with ${p.name}</button>
</div>
</form>
`,
  )}`
}

/**
 * The login form. Field names `username` and `password` are part of the
 * contract (docs/architecture.md, "The pages' form contract"); the form posts to `login` beside this page.
 */
export function loginPage(o: LoginPageOptions): string {
  const prefilled = o.username !== undefined && o.username !== ''
  // After a failure the message describes both fields, so a screen reader
  // reads it with the field the focus lands on (the alert alone is not
  // announced on a freshly loaded page).
  const described = o.error ? html` aria-describedby="form-error"` : ''
  const local = o.localLogin !== false
  const hasProviders = (o.providers ?? []).length > 0
  const localForm = html`<form method="post" action="login">
${hiddenFields({ csrf: o.csrf, ...o.continuation })}<div class="field">
<label for="username">Username</label>
<input id="username" name="username" type="text" autocomplete="${o.passkeys ? 'username webauthn' : 'username'}" autocapitalize="none" spellcheck="false" required value="${o.username ?? ''}"${described}${prefilled ? '' : html` autofocus`}>
</div>
<div class="field">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${described}${prefilled ? html` autofocus` : ''}>
</div>
<div class="actions">
<button class="primary" type="submit">Sign in</button>
</div>
</form>`
  const body = html`<h1>Sign in</h1>
<p class="lead">${o.purpose}</p>
${o.error ? html`<p class="alert" role="alert" id="form-error">${o.error}</p>` : ''}
${local ? localForm : ''}
${local && o.passkeys ? passkeySignIn(o.csrf, o.continuation) : ''}
${local && hasProviders ? html`<p class="or">or</p>` : ''}
${providerButtons(o)}${local && o.passkeys ? passkeyScript() : ''}`
  return renderPage('Sign in', body)
}
