import { html, type SafeHtml } from './html.js'
import { hiddenFields, renderPage } from './layout.js'

/** One requested scope, with the text people read (`authorization_server.scopes`). */
export interface ScopeView {
  name: string
  description: string
}

export interface ConsentPageOptions {
  clientName: string
  scopes: readonly ScopeView[]
  /** Who is signed in. */
  username: string
  /** The session's CSRF token. */
  csrf: string
  /** Form target beside the page: `consent` (authorization) or `device`. */
  action: 'consent' | 'device'
  /** The pending request carried to the POST (`request` or `user_code`). */
  continuation: Readonly<Record<string, string>>
  /** Authorization: where the browser goes next (origin of the redirect URI). */
  returnTo?: string
  /** Device flow: the user code to check against the device's screen (formatted XXXX-XXXX). */
  userCode?: string
}

function scopeList(clientName: string, scopes: readonly ScopeView[]): SafeHtml {
  if (scopes.length === 0) {
    return html`<p>It will know who you are, and get no other access to your account.</p>`
  }
  return html`<p>It will be able to:</p>
<ul class="scopes">
${scopes.map((s) => html`<li>${s.description}<span class="scope-name">${s.name}</span></li>\n`)}</ul>
<p class="fine">Only allow this if you trust ${clientName}.</p>`
}

/**
 * The consent page: the client's name and the requested scopes in plain words,
 * and two submit buttons named `decision` with values `allow` and `deny`
 * (DESIGN.md). For the device flow it also shows the user code so the person
 * can check it matches their device (RFC 8628 5.4, remote phishing).
 */
export function consentPage(o: ConsentPageOptions): string {
  const device = o.userCode !== undefined
  const heading = device ? 'Connect a device to your account?' : html`Allow ${o.clientName} to access your account?`
  const body = html`<h1>${heading}</h1>
${
  device
    ? html`<p class="lead"><span class="client">${o.clientName}</span> is asking for access. Check that this code matches the one shown on your device:</p>
<span class="user-code" aria-label="Device code">${o.userCode}</span>`
    : ''
}
${scopeList(o.clientName, o.scopes)}
<form method="post" action="${o.action}">
${hiddenFields({ csrf: o.csrf, ...o.continuation })}<div class="actions">
<button class="primary" type="submit" name="decision" value="allow">Allow</button>
<button class="secondary" type="submit" name="decision" value="deny">Deny</button>
</div>
</form>
<p class="fine">Signed in as ${o.username}.${o.returnTo ? html` After you choose, you will go back to <code>${o.returnTo}</code>.` : ''}${
    device ? ' If you did not start this on a device of your own, choose Deny.' : ''
  }</p>`
  return renderPage(device ? 'Connect a device' : 'Allow access', body)
}
