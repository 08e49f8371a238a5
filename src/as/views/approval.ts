/**
 * The approval page (issue #41, docs/approvals.md) and the account page's list of approvals.
 * What an agent asks is a stranger's text: the client's name is isolated like on every page, and a
 * tool's arguments or a CIBA binding_message are escaped (the one `html` escaper), shown left-to-right
 * in their own isolate, with every control, format (bidi) and separator character written as a JSON
 * `\uXXXX` escape, so what the person reads is exactly what is bound, and long values are folded.
 */
import { clientLogo, isolated, type ClientView } from './client.js'
import type { ScopeView } from './consent.js'
import { html, type SafeHtml } from './html.js'
import { hiddenFields, renderPage } from './layout.js'
import { visibleJson, visibleText } from './visible-text.js'
import { lazyDateFormat } from './date-format.js'

const WHEN = lazyDateFormat('en-GB', { day: 'numeric', month: 'long', hour: '2-digit', minute: '2-digit', timeZone: 'UTC', timeZoneName: 'short' })

/** A value longer than this (as shown) is folded: its start is shown, the rest behind a disclosure. */
export const FOLD_AT = 240
const FOLDED_START = 120

/** One value, as JSON, left-to-right in its own isolate, folded when long. */
function jsonValue(value: unknown): SafeHtml {
  const text = visibleJson(JSON.stringify(value, null, 2) ?? 'null')
  if (text.length <= FOLD_AT) return html`<pre class="json" dir="ltr"><bdi>${text}</bdi></pre>`
  return html`<details class="json"><summary dir="ltr"><bdi>${text.slice(0, FOLDED_START)}</bdi>… (${text.length} characters)</summary>
<pre class="json" dir="ltr"><bdi>${text}</bdi></pre></details>`
}

/** RFC 9396 details (at most 8 KiB): whole, never folded, as on the consent page; what is folded away could be approved unseen. */
function wholeJson(value: unknown): SafeHtml {
  return html`<pre class="detail" dir="ltr"><bdi>${visibleJson(JSON.stringify(value, null, 2) ?? 'null')}</bdi></pre>`
}

/** A tool's arguments (canonical JSON text of an object): one row per argument; anything else as one value. */
export function argumentsView(argumentsJson: string): SafeHtml {
  let parsed: unknown
  try {
    parsed = JSON.parse(argumentsJson)
  } catch {
    return jsonValue(argumentsJson)
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return jsonValue(parsed)
  const entries = Object.entries(parsed)
  if (entries.length === 0) return html`<p>No arguments.</p>`
  return html`<dl class="arguments">
${entries.map(([k, v]) => html`<dt dir="ltr"><bdi>${visibleText(k)}</bdi></dt><dd>${jsonValue(v)}</dd>\n`)}</dl>`
}

/** What is asked, as the page shows it. */
export type ApprovalWhat =
  /** `route`: the gateway route (config name) the call goes to: one tool name can exist on two servers. */
  | { readonly kind: 'mcp_tool'; readonly route: string; readonly tool: string; readonly argumentsJson: string }
  | { readonly kind: 'ciba'; readonly scopes: readonly ScopeView[]; readonly bindingMessage: string | null; readonly authorizationDetailsJson: string | null }

function whatView(name: SafeHtml, what: ApprovalWhat): SafeHtml {
  if (what.kind === 'mcp_tool')
    return html`<p class="lead"><span class="client">${name}</span> asks to run the tool <code dir="ltr"><bdi>${visibleText(what.tool)}</bdi></code> of <code dir="ltr"><bdi>${visibleText(what.route)}</bdi></code> for you, with these arguments:</p>
${argumentsView(what.argumentsJson)}`
  return html`<p class="lead"><span class="client">${name}</span> asks to act for you.</p>
${
  what.bindingMessage === null
    ? ''
    : html`<p>Check that this message matches the one the application shows:</p>
<p class="user-code" dir="ltr"><bdi>${visibleText(what.bindingMessage)}</bdi></p>
`
}${
  what.scopes.length === 0
    ? ''
    : html`<p>It will be able to:</p>
<ul class="scopes">
${what.scopes.map((s) => html`<li>${s.description}<span class="scope-name">${s.name}</span></li>\n`)}</ul>
`
}${what.authorizationDetailsJson === null ? '' : html`<p>In detail:</p>\n${wholeJson(JSON.parse(what.authorizationDetailsJson))}\n`}`
}

export interface ApprovalPageOptions {
  readonly id: string
  readonly client: ClientView
  readonly what: ApprovalWhat
  readonly signedInAs: string
  readonly csrf: string
  /** Epoch seconds the request lapses. */
  readonly expiresAt: number
}

/**
 * The approval page: who asks, what exactly, Approve / Deny (two submit buttons named `decision`,
 * docs/architecture.md "The pages' form contract"), and who is signed in. Served with the pages' CSP
 * (no script, frame-ancestors 'none').
 */
export function approvalPage(o: ApprovalPageOptions): string {
  const name = isolated(o.client.name)
  const logo = clientLogo(o.client)
  const until = new Date(o.expiresAt * 1000)
  const body = html`${logo === '' ? '' : html`<div class="client-head">${logo}<span class="client">${name}</span></div>\n`}<h1>Approve this request?</h1>
${whatView(name, o.what)}
<p class="fine">Only approve what you expect. This request lapses at <time datetime="${until.toISOString()}">${WHEN.format(until)}</time>.</p>
<form method="post" action="approve">
${hiddenFields({ csrf: o.csrf, id: o.id })}<div class="actions">
<button type="submit" name="decision" value="approve">Approve</button>
<button class="secondary" type="submit" name="decision" value="deny">Deny</button>
</div>
</form>
<p class="fine whoami">Signed in as <strong>${o.signedInAs}</strong>.</p>`
  return renderPage('Approve this request?', body)
}

/** One approval on the account page. */
export interface ApprovalListView {
  readonly id: string
  readonly client: ClientView
  readonly what: ApprovalWhat
  readonly status: 'pending' | 'approved' | 'denied' | 'used' | 'cancelled' | 'expired'
  readonly createdAt: number
}

const STATUS_WORDS: Readonly<Record<ApprovalListView['status'], string>> = {
  pending: 'Waiting for you',
  approved: 'Approved',
  denied: 'Denied',
  used: 'Approved and used',
  cancelled: 'Cancelled (access withdrawn)',
  expired: 'Expired',
}

function approvalItem(a: ApprovalListView, csrf: string): SafeHtml {
  const when = new Date(a.createdAt * 1000)
  const title = a.what.kind === 'mcp_tool' ? html`<code dir="ltr"><bdi>${visibleText(a.what.tool)}</bdi></code>` : 'Act for you'
  return html`<li>
<div class="client-head">${clientLogo(a.client, 32)}<h3>${isolated(a.client.name)}: ${title}</h3></div>
<p class="when">${STATUS_WORDS[a.status]} · asked on <time datetime="${when.toISOString()}">${WHEN.format(when)}</time></p>
${
  a.status === 'pending'
    ? html`<p><a href="approve?id=${a.id}">Review</a></p>
<form method="post" action="account">
${hiddenFields({ csrf, deny_approval: a.id })}<div class="actions">
<button class="danger" type="submit" name="decision" value="deny">Deny</button>
</div>
</form>
`
    : ''
}</li>
`
}

/** The account page's section: pending approvals first (each with Deny), then the ones given. */
export function approvalsSection(list: readonly ApprovalListView[], csrf: string): SafeHtml {
  const pending = list.filter((a) => a.status === 'pending')
  const given = list.filter((a) => a.status !== 'pending')
  return html`<section id="approvals">
<h2>Approvals</h2>
${
  list.length === 0
    ? html`<p>No application has asked for your approval lately.</p>`
    : html`${pending.length === 0 ? html`<p>Nothing is waiting for your approval.</p>` : html`<ul class="apps">\n${pending.map((a) => approvalItem(a, csrf))}</ul>`}
${given.length === 0 ? '' : html`<h3>Decided lately</h3>\n<ul class="apps">\n${given.map((a) => approvalItem(a, csrf))}</ul>`}`
}
</section>
`
}
