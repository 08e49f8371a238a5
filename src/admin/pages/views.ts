/**
 * The admin pages' HTML (src/admin/pages/): the same document, stylesheet
 * and escaping as the sign-in and account pages (src/as/views/), no script.
 * Every form carries the pages session's CSRF token; every action is two
 * steps: the first form only asks for confirmation (see confirmPage).
 */
import { html, type HtmlValue, type SafeHtml } from '../../as/views/html.js'
import { DAY, dayElement } from '../../as/views/date-format.js'
import { hiddenFields, renderPage } from '../../as/views/layout.js'

function when(epochSec: number): SafeHtml {
  return dayElement(new Date(epochSec * 1000))
}

/** A date with its time of day (UTC), for an end that is hours away. */
function whenExactly(epochSec: number): SafeHtml {
  const at = new Date(epochSec * 1000)
  return html`<time datetime="${at.toISOString()}">${DAY.format(at)}, ${at.toISOString().slice(11, 16)} UTC</time>`
}

/** Every admin page: the heading, who is signed in, a way back home and out. */
function adminPage(title: string, signedInAs: string, csrf: string, body: SafeHtml, notice?: HtmlValue): string {
  return renderPage(
    title,
    html`<h1>${title}</h1>
<p class="lead">Signed in to the admin pages as <strong>${signedInAs}</strong>.</p>
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
${body}
<nav aria-label="Admin pages"><p><a href="./">Find a person or a client</a></p></nav>
<form method="post" action="sign-out">
${hiddenFields({ csrf })}<div class="actions">
<button class="secondary" type="submit">Sign out of the admin pages</button>
</div>
</form>
`,
  )
}

function searchForm(action: 'people' | 'clients', label: string, q: string): SafeHtml {
  return html`<form method="get" action="${action}" role="search">
<label for="q-${action}">${label}</label>
<input id="q-${action}" name="q" type="search" value="${q}" maxlength="128" autocomplete="off">
<div class="actions">
<button type="submit">Search</button>
</div>
</form>
`
}

/** The home page: find a person, find a client. */
export function homePage(o: { signedInAs: string; csrf: string; notice?: string }): string {
  return adminPage(
    'Admin',
    o.signedInAs,
    o.csrf,
    html`<h2>People</h2>
${searchForm('people', 'Username contains', '')}
<h2>Clients</h2>
${searchForm('clients', 'Client id or name contains', '')}`,
    o.notice,
  )
}

export interface PersonRow {
  username: string
  sub: string
  source: 'config' | 'admin'
  disabled: boolean
}

/** Search results for people. */
export function peoplePage(o: { signedInAs: string; csrf: string; q: string; people: readonly PersonRow[]; more: boolean }): string {
  return adminPage(
    'People',
    o.signedInAs,
    o.csrf,
    html`${searchForm('people', 'Username contains', o.q)}
${
  o.people.length === 0
    ? html`<p>No person matches.</p>`
    : html`<ul class="apps">
${o.people.map(
  (
    p,
  ) => html`<li><a href="person?id=${encodeURIComponent(p.username)}">${p.username}</a> <span class="fine">(${p.source === 'config' ? 'from the config' : 'managed here'}${p.disabled ? ', disabled' : ''})</span></li>
`,
)}</ul>`
}${o.more ? html`<p class="fine">More people match: narrow the search.</p>` : ''}`,
  )
}

export interface PersonDetail extends PersonRow {
  totp: boolean
  passkeys: number
  grants: readonly { id: string; clientId: string; clientName: string; allowedAt: number }[]
}

function actionForm(csrf: string, action: string, fields: Readonly<Record<string, string>>, label: string, danger = true): SafeHtml {
  return html`<form method="post" action="act">
${hiddenFields({ csrf, action, ...fields })}<div class="actions">
<button class="${danger ? 'danger' : 'secondary'}" type="submit">${label}</button>
</div>
</form>
`
}

/** One person: their ways of signing in, the applications they allowed, and the support-desk actions. */
export function personPage(o: { signedInAs: string; csrf: string; person: PersonDetail; notice?: string }): string {
  const p = o.person
  const target = { person: p.username }
  return adminPage(
    `Person ${p.username}`,
    o.signedInAs,
    o.csrf,
    html`<p>${p.source === 'config' ? 'From the config file.' : 'Managed here.'} ${p.disabled ? html`<strong>Disabled:</strong> cannot sign in.` : 'Can sign in.'}</p>
<h2>Ways of signing in</h2>
<p>${p.totp ? 'An authenticator app' : 'No authenticator app'}; ${String(p.passkeys)} passkey${p.passkeys === 1 ? '' : 's'}.</p>
${actionForm(o.csrf, 'reset_factors', target, 'Reset second factors')}
<h2>Sessions</h2>
${actionForm(o.csrf, 'sign_out_everywhere', target, 'Sign out everywhere')}
<h2>Applications allowed</h2>
${
  p.grants.length === 0
    ? html`<p>No application has access.</p>`
    : html`<ul class="apps">
${p.grants.map(
  (g) => html`<li><h3>${g.clientName}</h3><p class="when">Granted on ${when(g.allowedAt)}</p>
${actionForm(o.csrf, 'revoke_grant', { person: p.username, grant: g.id }, `Revoke ${g.clientName}’s access`)}</li>
`,
)}</ul>`
}
<h2>Account</h2>
${p.disabled ? html`<p>This person is disabled.</p>` : actionForm(o.csrf, 'disable', target, 'Disable this person')}`,
    o.notice,
  )
}

export interface ClientRow {
  clientId: string
  name: string
  confidential: boolean
}

/** Search results for clients. */
export function clientsPage(o: { signedInAs: string; csrf: string; q: string; clients: readonly ClientRow[]; more: boolean }): string {
  return adminPage(
    'Clients',
    o.signedInAs,
    o.csrf,
    html`${searchForm('clients', 'Client id or name contains', o.q)}
${
  o.clients.length === 0
    ? html`<p>No client matches.</p>`
    : html`<ul class="apps">
${o.clients.map(
  (c) => html`<li><a href="client?id=${encodeURIComponent(c.clientId)}">${c.name}</a> <span class="fine">(${c.clientId})</span></li>
`,
)}</ul>`
}${o.more ? html`<p class="fine">More clients match: narrow the search.</p>` : ''}`,
  )
}

export interface ClientDetail extends ClientRow {
  source: string
  rotatable: boolean
  disabled: boolean
  grants: readonly { id: string; person: string; created_at: number }[]
}

/** One client: its secret's rotation when it has one, and the grants people gave it, each revocable. */
export function clientPage(o: { signedInAs: string; csrf: string; client: ClientDetail; notice?: string }): string {
  const c = o.client
  return adminPage(
    `Client ${c.clientId}`,
    o.signedInAs,
    o.csrf,
    html`<p>${c.name} · ${c.confidential ? 'confidential' : 'public'} · from ${c.source}.${c.disabled ? html` <strong>Disabled:</strong> it gets no tokens.` : ''}</p>
<h2>Secret</h2>
${
  c.rotatable
    ? actionForm(o.csrf, 'rotate_secret', { client_id: c.clientId }, 'Rotate the secret')
    : html`<p>This client’s secret cannot be rotated here (it has none, or it lives in the config file or with the client).</p>`
}
<h2>People who allowed it</h2>
${
  c.grants.length === 0
    ? html`<p>Nobody has allowed this client.</p>`
    : html`<ul class="apps">
${c.grants.map(
  (g) => html`<li><h3>${g.person}</h3><p class="when">Granted on ${when(g.created_at)}</p>
${actionForm(o.csrf, 'revoke_grant', { client_id: c.clientId, grant: g.id }, `Revoke ${g.person}’s grant`)}</li>
`,
)}</ul>`
}`,
    o.notice,
  )
}

/** The answer to a rotation: the new secret, shown this once. */
export function newSecretPage(o: { signedInAs: string; csrf: string; clientId: string; secret: string; previousExpiresAt: number }): string {
  return adminPage(
    `New secret of ${o.clientId}`,
    o.signedInAs,
    o.csrf,
    html`<p>Copy it now: it is shown only this once, and only its hash is kept.</p>
<p><label for="new-secret">New client secret</label>
<input id="new-secret" type="text" readonly value="${o.secret}" autocomplete="off" spellcheck="false"></p>
<p>The old secret keeps working until ${whenExactly(o.previousExpiresAt)}.</p>
<p><a href="client?id=${encodeURIComponent(o.clientId)}">Back to the client</a></p>`,
  )
}

/** What each action does, as the confirmation step says it. */
export const ACTION_TEXT: Readonly<Record<string, { title: string; consequence: string; button: string }>> = {
  reset_factors: {
    title: 'Reset second factors',
    consequence:
      'Their authenticator app and every passkey are removed. They sign in with their password and must set up a second factor again where one is required.',
    button: 'Yes, reset their second factors',
  },
  sign_out_everywhere: {
    title: 'Sign out everywhere',
    consequence: 'Every session of theirs ends, on every device. Applications they allowed keep their access.',
    button: 'Yes, sign them out everywhere',
  },
  disable: {
    title: 'Disable',
    consequence: 'They can no longer sign in; their sessions end and every application they allowed loses its access.',
    button: 'Yes, disable them',
  },
  revoke_grant: {
    title: 'Revoke access',
    consequence: 'The application’s tokens for them stop working at once, and it must ask them again.',
    button: 'Yes, revoke its access',
  },
  rotate_secret: {
    title: 'Rotate the secret',
    consequence: 'A new secret is shown once. The old one keeps working for a while, so the client can move over.',
    button: 'Yes, rotate the secret',
  },
}

/** The second step of every action: what it will do, and a form that does it. */
export function confirmPage(o: { signedInAs: string; csrf: string; action: string; subject: string; fields: Readonly<Record<string, string>> }): string {
  const text = ACTION_TEXT[o.action] ?? { title: o.action, consequence: '', button: 'Yes' }
  return adminPage(
    `${text.title}: ${o.subject}?`,
    o.signedInAs,
    o.csrf,
    html`<p>${text.consequence}</p>
<form method="post" action="act">
${hiddenFields({ csrf: o.csrf, action: o.action, ...o.fields, confirm: 'yes' })}<div class="actions">
<button class="danger" type="submit">${text.button}</button>
</div>
</form>
<p><a href="./">Cancel</a></p>`,
  )
}

/** A message page on its own (refused, signed out). */
export function messageOnly(title: string, message: HtmlValue, link?: { href: string; text: string }): string {
  return renderPage(
    title,
    html`<h1>${title}</h1>
<p>${message}</p>
${link ? html`<p><a href="${link.href}">${link.text}</a></p>` : ''}`,
  )
}
