import { clientLogo, isolated, type ClientView } from './client.js'
import type { DetailsView, ScopeView } from './consent.js'
import { html, type HtmlValue, type SafeHtml } from './html.js'
import { hiddenFields, renderPage } from './layout.js'
import { passkeyScript } from './passkeys.js'
import { dayElement } from './date-format.js'

/** One application the person allowed. */
export interface AppView {
  clientId: string
  client: ClientView
  scopes: readonly ScopeView[]
  /** RFC 9396: the authorization details approved in its live grants, per type (consented-details.ts); empty: none. */
  details?: readonly DetailsView[]
  /** Epoch seconds of the latest allowance. */
  allowedAt: number
}

export interface AccountPageOptions {
  signedInAs: string
  /** The session's CSRF token, for the withdraw and sign-out forms. */
  csrf: string
  apps: readonly AppView[]
  /** A status line after an action ("You withdrew ..."), client text in it isolated. */
  notice?: HtmlValue
  /** The passkeys section (views/passkeys.ts), for a local person when passkeys are on; it loads the passkey script. */
  passkeys?: SafeHtml
  /** The authenticator-app section (views/totp.ts), for a local person. */
  totp?: SafeHtml
  /** Ways of signing in added lately ("A passkey was added on ..."), so a person sees one they did not add. */
  factorsAdded?: readonly FactorAddedView[]
  /** Why the factor sections cannot change anything now, and the way to sign in again (see {@link confirmSection}). */
  confirm?: SafeHtml
  /** The approvals section (views/approval.ts): pending ones with Deny, then the ones given. */
  approvals?: SafeHtml
}

/** A way of signing in added lately, as the account page tells of it. */
export interface FactorAddedView {
  what: string
  /** Epoch seconds. */
  at: number
}

/**
 * The account page's "Confirm it's you": adding, replacing or removing a way
 * of signing in needs a recent sign-in with `need` (the person's strongest).
 * @param refused a change was just refused for this reason
 */
export function confirmSection(need: 'passkey' | 'totp' | 'password', refused: boolean): SafeHtml {
  const how = need === 'passkey' ? 'with your passkey' : need === 'totp' ? 'with your password and a code from your authenticator app' : 'with your password'
  return html`<section id="confirm">
<h2>Confirm it’s you</h2>
${
  refused
    ? html`<p class="alert" role="alert">Nothing was changed.</p>
`
    : ''
}<p>To add, replace or remove a way of signing in, sign in again ${how} first. This keeps someone who learned your password from adding their own.</p>
<p><a href="account?sign_in=again">Sign in again</a></p>
</section>
`
}

function factorsAdded(list: readonly FactorAddedView[]): SafeHtml {
  return html`<div class="notice" role="status">
${list.map((f) => {
  const when = new Date(f.at * 1000)
  return html`<p>${f.what} was added to your account on ${dayElement(when)}.</p>
`
})}<p>If that was not you, remove it and change your password.</p>
</div>
`
}

/**
 * RFC 9396: what the person approved in detail, as the consent page showed it: per type a heading
 * and each entry as JSON text, escaped and isolated (`<bdi>`, left to right).
 */
function approvedDetails(details: readonly DetailsView[] | undefined): SafeHtml | '' {
  if (details === undefined || details.length === 0) return ''
  return html`<section class="authorization-details" aria-label="What you approved in detail">
<p>In detail, you approved:</p>
${details.map(
  (d) => html`<h4 class="details-type"><bdi dir="ltr">${d.type}</bdi></h4>
${d.entries.map(
  (e) => html`<pre class="detail" dir="ltr"><bdi dir="ltr">${e}</bdi></pre>
`,
)}`,
)}</section>
`
}

function app(a: AppView, csrf: string): SafeHtml {
  const when = new Date(a.allowedAt * 1000)
  const logo = clientLogo(a.client, 32)
  return html`<li>
<div class="client-head">${logo}<h3>${isolated(a.client.name)}</h3></div>
<p class="when">Allowed on ${dayElement(when)}</p>
${
  a.scopes.length === 0
    ? html`<p>It knows who you are, and has no other access to your account.</p>`
    : html`<ul class="scopes">
${a.scopes.map((s) => html`<li>${s.description}<span class="scope-name">${s.name}</span></li>\n`)}</ul>`
}
${approvedDetails(a.details)}<form method="post" action="account">
${hiddenFields({ csrf, client_id: a.clientId })}<div class="actions">
<button class="danger" type="submit" name="withdraw" value="1" aria-label="Withdraw access for ${a.client.name}">Withdraw access</button>
</div>
</form>
</li>
`
}

/**
 * The account page: who is signed in, the applications they allowed (name,
 * logo, scopes in plain words, when), each with a "Withdraw access" button,
 * a sign-out button and "Sign out everywhere". Every action is a POST with the session's CSRF token.
 */
export function accountPage(o: AccountPageOptions): string {
  const body = html`<h1>Your account</h1>
<p class="lead">Signed in as <strong>${o.signedInAs}</strong>.</p>
${o.notice ? html`<p class="notice" role="status">${o.notice}</p>` : ''}
${o.factorsAdded !== undefined && o.factorsAdded.length > 0 ? factorsAdded(o.factorsAdded) : ''}
<h2>Applications you allowed</h2>
${
  o.apps.length === 0
    ? html`<p>No application has access to your account.</p>`
    : html`<p class="fine section-note">Withdrawing ends an application's access at once: its tokens stop working, and it must ask you again.</p>
<ul class="apps">
${o.apps.map((a) => app(a, o.csrf))}</ul>`
}
${o.approvals ?? ''}${o.confirm ?? ''}${o.passkeys ?? ''}${
  o.totp
    ? html`<section id="totp">
${o.totp}</section>
`
    : ''
}<form method="post" action="logout">
${hiddenFields({ csrf: o.csrf })}<div class="actions">
<button class="secondary" type="submit" name="decision" value="logout">Sign out</button>
</div>
</form>
<section id="everywhere">
<h2>Signed in elsewhere?</h2>
<p class="fine section-note">Signing out everywhere ends every session of yours here, on every device, and tells the applications you signed in to through it. Applications you allowed keep their access until you withdraw it above.</p>
<form method="post" action="account">
${hiddenFields({ csrf: o.csrf })}<div class="actions">
<button class="secondary" type="submit" name="sign_out" value="everywhere">Sign out everywhere</button>
</div>
</form>
</section>
${o.passkeys ? passkeyScript() : ''}`
  return renderPage('Your account', body)
}
