import { clientLinks, clientLogo, isolated, type ClientView } from './client.js'
import { html, type SafeHtml } from './html.js'
import { hiddenFields, renderPage } from './layout.js'

/** One requested scope, with the text people read (`authorization_server.scopes`). */
export interface ScopeView {
  name: string
  description: string
}

/** RFC 9396: the requested authorization details of one type, each entry as folded JSON text (consented-details.ts). */
export interface DetailsView {
  type: string
  entries: readonly string[]
}

export interface ConsentPageOptions {
  /** The application asking: its name, logo, policy and terms links. */
  client: ClientView
  scopes: readonly ScopeView[]
  /** RFC 9396 authorization details asked for, per type; absent or empty: none. */
  details?: readonly DetailsView[]
  /** Who is signed in, as people call them (name claim or username). */
  signedInAs: string
  /** The session's CSRF token. */
  csrf: string
  /** Form target beside the page: `consent` (authorization) or `device`. */
  action: 'consent' | 'device'
  /** The pending request carried to the POST (`request` or `user_code`); also what "Not you?" comes back to. */
  continuation: Readonly<Record<string, string>>
  /** Authorization: where the browser goes next (origin of the redirect URI). */
  returnTo?: string
  /** Device flow: the user code to check against the device's screen (formatted XXXX-XXXX). */
  userCode?: string
  /**
   * A client nobody here vetted: the host it will send the person to (shown as a caution), and how
   * bearward knows it: it registered itself (RFC 7591), or bearward fetched the metadata document its
   * client_id names (then `documentHost` is that URL's host).
   */
  selfRegistered?: { redirectHost: string; how?: 'registration' | 'metadata_document'; documentHost?: string }
}

function scopeList(clientName: SafeHtml, scopes: readonly ScopeView[], details: boolean): SafeHtml | '' {
  if (scopes.length === 0 && details) return ''
  if (scopes.length === 0) {
    return html`<p>It will know who you are, and get no other access to your account.</p>`
  }
  return html`<p>It will be able to:</p>
<ul class="scopes">
${scopes.map((s) => html`<li>${s.description}<span class="scope-name">${s.name}</span></li>\n`)}</ul>
<p class="fine">Only allow this if you trust ${clientName}.</p>`
}

/**
 * RFC 9396: what the client asks to do, per type a heading and each entry as
 * JSON, escaped by the template and isolated (`<bdi>`, left to right), so a
 * value can neither become markup nor reorder the text around it. Shown
 * whole (never in a scrolling box): the person approves what they can read.
 */
function detailsList(details: readonly DetailsView[] | undefined): SafeHtml | '' {
  if (details === undefined || details.length === 0) return ''
  return html`<section class="authorization-details" aria-label="What it asks to do">
<p>It asks to do this:</p>
${details.map(
  (d) => html`<h2 class="details-type"><bdi dir="ltr">${d.type}</bdi></h2>
${d.entries.map(
  (e) => html`<pre class="detail" dir="ltr"><bdi dir="ltr">${e}</bdi></pre>
`,
)}`,
)}</section>
`
}

/**
 * "Signed in as Alice. Not you?": a form of its own that signs out and comes
 * back to the same pending request (POST /logout with the session's CSRF
 * token), so the person can sign in as someone else without starting over.
 */
function whoIsSignedIn(o: ConsentPageOptions): SafeHtml {
  return html`<form method="post" action="logout" class="whoami">
${hiddenFields({ csrf: o.csrf, ...o.continuation })}<p>Signed in as <strong>${o.signedInAs}</strong>.
<button class="link" type="submit" name="switch" value="1">Not you? Use another account</button></p>
</form>`
}

/**
 * The consent page: the client's logo and name, the requested scopes in
 * plain words, the client's policy and terms links, who is signed in (with a
 * way to switch), and two submit buttons named `decision` with values `allow`
 * and `deny` (docs/architecture.md, "The pages' form contract"). For the device flow it also shows the user code so
 * the person can check it matches their device (RFC 8628 5.4, remote phishing).
 */
export function consentPage(o: ConsentPageOptions): string {
  const device = o.userCode !== undefined
  const name = isolated(o.client.name)
  const heading = device ? 'Connect a device to your account?' : html`Allow ${name} to access your account?`
  const logo = clientLogo(o.client)
  const body = html`${logo === '' ? '' : html`<div class="client-head">${logo}<span class="client">${name}</span></div>\n`}<h1>${heading}</h1>
${
  device
    ? html`<p class="lead"><span class="client">${name}</span> is asking for access. Check that this code matches the one shown on your device:</p>
<span class="user-code" aria-label="Device code">${o.userCode}</span>`
    : ''
}
${
  o.selfRegistered
    ? html`<p class="alert" role="note">${
        o.selfRegistered.how === 'metadata_document'
          ? html`This server read ${name}’s description from <code>${isolated(o.selfRegistered.documentHost ?? '')}</code>, where it says it lives`
          : html`${name} registered itself with this server`
      }; nobody here has checked who runs it. If you allow, you will be sent to <code>${isolated(o.selfRegistered.redirectHost)}</code>.</p>
`
    : ''
}${scopeList(name, o.scopes, (o.details?.length ?? 0) > 0)}
${detailsList(o.details)}${clientLinks(o.client)}
<form method="post" action="${o.action}">
${hiddenFields({ csrf: o.csrf, ...o.continuation })}<div class="actions">
<button class="primary" type="submit" name="decision" value="allow">Allow</button>
<button class="secondary" type="submit" name="decision" value="deny">Deny</button>
</div>
</form>
${whoIsSignedIn(o)}
${
  o.returnTo || device
    ? html`<p class="fine">${o.returnTo ? html`After you choose, you will go back to <code>${isolated(o.returnTo)}</code>.` : ''}${
        device ? 'If you did not start this on a device of your own, choose Deny.' : ''
      }</p>`
    : ''
}`
  return renderPage(device ? 'Connect a device' : 'Allow access', body)
}
