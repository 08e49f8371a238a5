import { html, type SafeHtml } from './html.js'
import { hiddenFields, renderPage } from './layout.js'
import { dayElement } from './date-format.js'

/**
 * The passkey parts of the pages. Each is a plain form that the passkey
 * script (assets/passkeys.js, the pages' only script) completes: it asks
 * `passkey-options` for a challenge, runs the browser's WebAuthn ceremony,
 * puts the result in the form's `credential` field and submits it. Without
 * the script, or in a browser without WebAuthn, the forms stay hidden.
 */

/** Path of the script, relative to the page (like the stylesheet). */
export const PASSKEY_SCRIPT_HREF = 'assets/passkeys.js'

/** The script tag, loaded deferred (the CSP allows this one file and nothing else). */
export function passkeyScript(): SafeHtml {
  return html`<script src="${PASSKEY_SCRIPT_HREF}" defer></script>\n`
}

/** One passkey on the account page. */
export interface PasskeyView {
  credentialId: string
  name: string
  /** Epoch seconds. */
  createdAt: number
  lastUsedAt: number | null
  /** A synced passkey (multi-device). */
  synced: boolean
}

function when(sec: number): SafeHtml {
  return dayElement(new Date(sec * 1000))
}

function passkey(p: PasskeyView, i: number, csrf: string, canChange: boolean): SafeHtml {
  return html`<li>
<h3>${p.name}</h3>
<p class="when">Added on ${when(p.createdAt)}${p.lastUsedAt === null ? html`, not used yet` : html`, last used on ${when(p.lastUsedAt)}`}${p.synced ? html` · synced` : ''}</p>
<form method="post" action="passkeys">
${hiddenFields({ csrf, action: 'rename', credential_id: p.credentialId })}<div class="field">
<label for="passkey-rename-${i}">New name for ${p.name}</label>
<input id="passkey-rename-${i}" name="name" type="text" maxlength="60" autocomplete="off" value="${p.name}" required>
</div>
<div class="actions">
<button class="secondary" type="submit" aria-label="Rename passkey ${p.name}">Rename</button>
</div>
</form>
${
  canChange
    ? html`<form method="post" action="passkeys">
${hiddenFields({ csrf, action: 'remove', credential_id: p.credentialId })}<div class="actions">
<button class="danger" type="submit" aria-label="Remove passkey ${p.name}">Remove</button>
</div>
</form>
`
    : ''
}</li>
`
}

/**
 * The account page's passkeys: the list, each with Rename and Remove, and the form that adds one.
 * @param carry hidden fields the add form carries (`request` or `user_code`: what a second factor was set up for)
 * @param canChange false: no Add or Remove (a factor change needs a recent sign-in with the person's strongest factor)
 */
export function passkeySection(passkeys: readonly PasskeyView[], csrf: string, carry: Readonly<Record<string, string>> = {}, canChange = true): SafeHtml {
  const list =
    passkeys.length === 0
      ? html`<p>You have no passkeys yet.</p>`
      : html`<ul class="apps passkeys">\n${passkeys.map((p, i) => passkey(p, i, csrf, canChange))}</ul>`
  const head = html`<h2>Passkeys</h2>
<p class="fine section-note">A passkey signs you in with this device's screen lock or a security key, without your password.</p>
${list}
`
  if (!canChange) return head
  return html`${head}<form method="post" action="passkeys" data-passkey="register" hidden>
${hiddenFields({ csrf, action: 'add', credential: '', ...carry })}<div class="field">
<label for="passkey-name">Name of the new passkey</label>
<input id="passkey-name" name="name" type="text" maxlength="60" autocomplete="off" value="Passkey" required>
</div>
<p class="alert" role="alert" data-passkey-error hidden></p>
<div class="actions">
<button class="primary" type="submit">Add a passkey</button>
</div>
</form>
`
}

/**
 * A form the passkey script completes with an authentication (`purpose`,
 * the data-passkey the script reads); `heading` goes inside the form, hidden
 * with it where the script cannot run.
 */
function authenticationForm(o: {
  action: string
  purpose: 'sign-in' | 'second-factor'
  fields: Readonly<Record<string, string>>
  label: string
  button: 'primary' | 'secondary'
  heading?: string
}): SafeHtml {
  return html`<form class="passkey" method="post" action="${o.action}" data-passkey="${o.purpose}" hidden>
${o.heading === undefined ? '' : html`<h2>${o.heading}</h2>\n`}${hiddenFields({ ...o.fields, credential: '' })}<p class="alert" role="alert" data-passkey-error hidden></p>
<div class="actions">
<button class="${o.button}" type="submit">${o.label}</button>
</div>
</form>
`
}

/** The login page's passkey sign-in: a button, and the browser's autofill where it offers passkeys there. */
export function passkeySignIn(csrf: string, continuation: Readonly<Record<string, string>>): SafeHtml {
  return authenticationForm({
    action: 'passkey-login',
    purpose: 'sign-in',
    fields: { csrf, ...continuation },
    label: 'Sign in with a passkey',
    button: 'secondary',
  })
}

/**
 * After the password, the passkey as the second factor: a button whose
 * ceremony asks the browser for one of the person's own passkeys (the
 * options name them), posted to `second-factor`, and the script.
 */
export function passkeySecondFactor(csrf: string, button: 'primary' | 'secondary', heading?: string): SafeHtml {
  const form = authenticationForm({
    action: 'second-factor',
    purpose: 'second-factor',
    fields: { csrf },
    label: 'Use your passkey',
    button,
    ...(heading === undefined ? {} : { heading }),
  })
  return html`${form}${passkeyScript()}`
}

/** The second-factor page of a person whose only second factor is a passkey. */
export function passkeySecondFactorPage(o: { csrf: string; error?: string }): string {
  const body = html`<h1>Use your passkey</h1>
<p class="lead">Your password was right. This application also asks for your passkey: your device will ask for its screen lock, or for your security key.</p>
${o.error ? html`<p class="alert" role="alert" id="form-error">${o.error}</p>` : ''}
${passkeySecondFactor(o.csrf, 'primary')}<p class="fine section-note">If this browser cannot use your passkey, sign in on a device that can.</p>`
  return renderPage('Use your passkey', body)
}
