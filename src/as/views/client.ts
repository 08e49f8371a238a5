/**
 * How a client (an application) is shown to people: its name, its logo and
 * its privacy policy and terms links (RFC 7591 2 `logo_uri`, `policy_uri`,
 * `tos_uri`), the same on every page that names it.
 */
import type { ClientConfig } from '../../config/validated-config.js'
import { PAGE_HEADERS } from '../../http/reply.js'
import { html, type SafeHtml } from './html.js'

/**
 * Text a client chose (its name, where it sends people), isolated from the
 * words around it with `<bdi>`: whatever its direction, it cannot reorder
 * our sentence (configured, registered and metadata-document clients alike;
 * the rules of src/config/client-values.ts already refuse bidi controls, this
 * also covers right-to-left names and records stored before those rules).
 * @see https://html.spec.whatwg.org/multipage/text-level-semantics.html#the-bdi-element
 */
export function isolated(text: string): SafeHtml {
  return html`<bdi>${text}</bdi>`
}

/** What a page needs to show a client. */
export type ClientView = Pick<ClientConfig, 'name' | 'metadata'>

/**
 * The logo, when the client has one. Decorative (`alt=""`): the name is
 * always written beside it. Sized here so the layout does not jump while an
 * https logo loads; no referrer goes to the logo's host.
 */
export function clientLogo(client: ClientView, size = 48): SafeHtml | '' {
  const src = client.metadata.logoUri
  if (src === null) return ''
  return html`<img class="client-logo" src="${src}" alt="" width="${size}" height="${size}" referrerpolicy="no-referrer">`
}

/** "Read App's privacy policy and terms of service", for the links the client registered. */
export function clientLinks(client: ClientView): SafeHtml | '' {
  const { policyUri, tosUri } = client.metadata
  if (policyUri === null && tosUri === null) return ''
  const link = (href: string, text: string): SafeHtml => html`<a href="${href}" target="_blank" rel="noopener noreferrer">${text}</a>`
  const links: SafeHtml[] = []
  if (policyUri !== null) links.push(link(policyUri, 'privacy policy'))
  if (tosUri !== null) links.push(link(tosUri, 'terms of service'))
  const joined = links.length === 2 ? html`${links[0]} and ${links[1]}` : links[0]
  return html`<p class="fine client-links">Read ${isolated(client.name)}’s ${joined}.</p>`
}

/**
 * The page headers for a page that shows these clients' logos: the usual
 * strict CSP with `img-src` widened by exactly each https logo's origin, or
 * by `data:` for an inline one, and by nothing else. Without logos, the usual
 * headers.
 */
export function headersForClientLogo(...clients: readonly ClientView[]): Readonly<Record<string, string>> {
  const sources = new Set<string>()
  for (const client of clients) {
    const logo = client.metadata.logoUri
    if (logo !== null) sources.add(logo.startsWith('data:') ? 'data:' : new URL(logo).origin)
  }
  if (sources.size === 0) return {}
  const base = PAGE_HEADERS['content-security-policy'] ?? ''
  let found = false
  const directives = base.split(';').map((d) => {
    const parts = d.trim().split(/\s+/)
    if (parts[0] !== 'img-src') return d.trim()
    found = true
    for (const source of sources) if (!parts.includes(source)) parts.push(source)
    return parts.join(' ')
  })
  if (!found) directives.push(`img-src ${[...sources].join(' ')}`)
  return { 'content-security-policy': directives.filter((d) => d !== '').join('; ') }
}
