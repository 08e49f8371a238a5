import { html } from './html.js'
import { renderPage } from './layout.js'

export interface MessagePageOptions {
  title: string
  message: string
  /** A second paragraph: what to do next. */
  extra?: string
  /** Technical detail for developers, e.g. the RFC error code. */
  detail?: string
  /** A link to go on from here (relative to the page); its text may name a client, so it is isolated (`dir="auto"`). */
  link?: { href: string; text: string }
  /** Path back to the pages' level when served deeper (see renderPage). */
  assetPrefix?: string
}

/**
 * Error pages and plain notices ("signed out", "code expired"), in the same
 * card as the other pages. Text only; the caller never passes markup.
 */
export function messagePage(o: MessagePageOptions): string {
  const body = html`<h1>${o.title}</h1>
<p class="lead">${o.message}</p>
${o.extra ? html`<p>${o.extra}</p>` : ''}
${o.link ? html`<p><a href="${o.link.href}" dir="auto">${o.link.text}</a></p>` : ''}
${o.detail ? html`<p class="fine">Error code: <code>${o.detail}</code></p>` : ''}`
  return renderPage(o.title, body, o.assetPrefix)
}
