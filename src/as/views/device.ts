import { isolated } from './client.js'
import { html } from './html.js'
import { hiddenFields, renderPage } from './layout.js'

export interface DeviceEntryOptions {
  /** Pre-session CSRF token (double-submit with the cookie). */
  csrf: string
  /** What was typed, to show again after a mistake. */
  userCode?: string
  error?: string
}

/**
 * RFC 8628 3.3: where a person types the code their device shows. It posts
 * to `device` (with a CSRF token, like every form here); the answer is a 303
 * to `device?user_code=…`, the same page verification_uri_complete opens.
 */
export function deviceEntryPage(o: DeviceEntryOptions): string {
  const body = html`<h1>Connect a device</h1>
<p class="lead">Enter the code shown on your device.</p>
${o.error ? html`<p class="alert" role="alert" id="form-error">${o.error}</p>` : ''}
<form method="post" action="device">
${hiddenFields({ csrf: o.csrf })}<div class="field">
<label for="user_code">Code</label>
<input id="user_code" name="user_code" type="text" class="code-input" placeholder="XXXX-XXXX" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="32" required autofocus value="${o.userCode ?? ''}"${o.error ? html` aria-invalid="true" aria-describedby="form-error"` : ''}>
</div>
<div class="actions">
<button class="primary" type="submit">Continue</button>
</div>
</form>`
  return renderPage('Connect a device', body)
}

/** The page after the person approved or denied the device. */
export function deviceResultPage(approved: boolean, clientName: string): string {
  const body = approved
    ? html`<h1>Device connected</h1>
<p class="notice" role="status">You allowed <span class="client">${isolated(clientName)}</span> on your device.</p>
<p class="lead">You can go back to your device now; it will finish signing in by itself. You can close this page.</p>`
    : html`<h1>Access denied</h1>
<p class="lead">The device was not connected to your account. You can close this page.</p>`
  return renderPage(approved ? 'Device connected' : 'Access denied', body)
}
