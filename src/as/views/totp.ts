import { html, SafeHtml } from './html.js'
import { hiddenFields, renderPage } from './layout.js'
import { dayElement } from './date-format.js'

/**
 * The authenticator-app (TOTP) parts of the pages: the second-factor page
 * after the password, the account page's section (set up, confirm, remove)
 * and the one page that shows the recovery codes. Plain forms, no script;
 * the QR code is inline SVG markup (elements and attributes only), which the
 * pages' CSP allows as it is.
 */

function when(sec: number): SafeHtml {
  return dayElement(new Date(sec * 1000))
}

/** The SVG of qrcode's `toString`: trusted output of that library (no text of anyone's in it but the encoded modules). */
function svgMarkup(svg: string): SafeHtml {
  if (!svg.startsWith('<svg ') || /<script|on\w+=|style=|href=/i.test(svg)) throw new Error('unexpected QR code markup')
  return new SafeHtml(svg.replace('<svg ', '<svg role="img" aria-label="QR code for your authenticator app" '))
}

export interface SecondFactorPageOptions {
  csrf: string
  error?: string
  /** The person's passkey offered too (views/passkeys.ts passkeySecondFactor), between the code and the recovery code. */
  passkey?: SafeHtml
}

/** After the password: a code from the authenticator app, or one of the recovery codes. */
export function secondFactorPage(o: SecondFactorPageOptions): string {
  const described = o.error ? html` aria-describedby="form-error"` : ''
  const body = html`<h1>Enter your code</h1>
<p class="lead">Open your authenticator app and enter the 6-digit code it shows for this account.</p>
${o.error ? html`<p class="alert" role="alert" id="form-error">${o.error}</p>` : ''}
<form method="post" action="second-factor">
${hiddenFields({ csrf: o.csrf })}<div class="field">
<label for="code">Code</label>
<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="7" required autofocus${described}>
</div>
<div class="actions">
<button class="primary" type="submit">Continue</button>
</div>
</form>
${o.passkey ?? ''}<h2>Lost your phone?</h2>
<form method="post" action="second-factor">
${hiddenFields({ csrf: o.csrf })}<div class="field">
<label for="recovery-code">Recovery code</label>
<input id="recovery-code" name="recovery_code" type="text" autocomplete="off" autocapitalize="none" spellcheck="false" maxlength="20" required>
</div>
<p class="fine section-note">Each recovery code works once.</p>
<div class="actions">
<button class="secondary" type="submit">Use a recovery code</button>
</div>
</form>`
  return renderPage('Enter your code', body)
}

/** The account page's section, in the state the person's authenticator app is in. */
export type TotpView =
  | { state: 'none' }
  | { state: 'setting-up'; secret: string; qrSvg: string; error?: string }
  | { state: 'on'; confirmedAt: number; recoveryLeft: number; lastRecoveryUse: number | null }

/** Groups of four, as authenticator apps show a secret typed in by hand. */
function grouped(secret: string): string {
  return secret.replace(/(.{4})(?=.)/g, '$1 ')
}

/**
 * @param carry hidden fields the set-up forms carry along (`request`: the
 *   authorization the person goes back to once the app is on).
 * @param canChange false: the state only, no forms (a factor change needs a
 *   recent sign-in with the person's strongest factor).
 */
export function totpSection(v: TotpView, csrf: string, carry: Readonly<Record<string, string>> = {}, canChange = true): SafeHtml {
  const head = html`<h2>Authenticator app</h2>
<p class="fine section-note">A second step after your password: a 6-digit code from an app on your phone.</p>
`
  // Without a recent sign-in with the strongest factor nothing here can change (the page's "Confirm it's you" says how).
  if (!canChange) {
    return v.state === 'on'
      ? html`${head}<p>On since ${when(v.confirmedAt)}. ${v.recoveryLeft} of 10 recovery codes unused.</p>
`
      : html`${head}<p>You have not set up an authenticator app.</p>
`
  }
  if (v.state === 'none') {
    return html`${head}<p>You have not set up an authenticator app.</p>
<form method="post" action="totp">
${hiddenFields({ csrf, action: 'start', ...carry })}<div class="actions">
<button class="secondary" type="submit">Set up an authenticator app</button>
</div>
</form>
`
  }
  if (v.state === 'setting-up') {
    const described = v.error ? html` aria-describedby="totp-error"` : ''
    return html`${head}<p>Scan this QR code with your authenticator app, or type the key below into it. Then enter the code it shows.</p>
<div class="qr">${svgMarkup(v.qrSvg)}</div>
<p>Key: <code class="secret" id="totp-secret">${grouped(v.secret)}</code></p>
${v.error ? html`<p class="alert" role="alert" id="totp-error">${v.error}</p>` : ''}
<form method="post" action="totp">
${hiddenFields({ csrf, action: 'confirm', ...carry })}<div class="field">
<label for="totp-code">Code from the app</label>
<input id="totp-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="7" required${described}>
</div>
<div class="actions">
<button class="primary" type="submit">Turn on</button>
</div>
</form>
<form method="post" action="totp">
${hiddenFields({ csrf, action: 'remove' })}<div class="actions">
<button class="secondary" type="submit">Cancel</button>
</div>
</form>
`
  }
  return html`${head}<p>On since ${when(v.confirmedAt)}. ${v.recoveryLeft} of 10 recovery codes unused${
    v.lastRecoveryUse === null ? html`.` : html`; one was last used on ${when(v.lastRecoveryUse)}.`
  }</p>
<form method="post" action="totp">
${hiddenFields({ csrf, action: 'remove' })}<div class="actions">
<button class="danger" type="submit">Turn off the authenticator app</button>
</div>
</form>
`
}

/** Shown once, right after the app is turned on: the recovery codes, never shown again. */
export function recoveryCodesPage(codes: readonly string[], next: { href: string; text: string } = { href: 'account', text: 'Back to your account' }): string {
  const body = html`<h1>Your recovery codes</h1>
<p class="lead">Your authenticator app is on. Keep these codes somewhere safe: each one signs you in once if you lose your phone.</p>
<p class="alert" role="status">They are shown only now.</p>
<ul class="recovery-codes">
${codes.map((c) => html`<li><code>${c}</code></li>\n`)}</ul>
<p><a href="${next.href}">${next.text}</a></p>`
  return renderPage('Your recovery codes', body)
}
