import { isolated } from './client.js'
import { html } from './html.js'
import { renderPage } from './layout.js'

export interface UnvouchedErrorOptions {
  /** The page title (what kind of failure). */
  title: string
  /** What went wrong, in words (the error's description). */
  message: string
  /** The RFC 6749 4.1.2.1 error code, for developers. */
  error: string
  /** The application's name, as it registered it. */
  clientName: string
  /**
   * How bearward knows it: it registered itself (RFC 7591), or bearward read
   * its metadata document from `documentHost` (issue #42: such a client did
   * not register itself, and the page must not say it did).
   */
  known: { how: 'registration' } | { how: 'metadata_document'; documentHost: string }
  /** Where it would have been sent: an origin, or a private-use scheme. */
  returnTo: string
}

/**
 * An authorization error of a client nobody here vouched for (it registered
 * itself, or is a metadata document), shown to a person who has not signed
 * in instead of being redirected to the client (RFC 9700 4.11.2): otherwise
 * anyone could register a phishing page and use this server's address to
 * send people there. Where the client lives is plain text, never a link:
 * going there is the person's own choice.
 */
export function unvouchedErrorPage(o: UnvouchedErrorOptions): string {
  const body = html`<h1>${o.title}</h1>
<p class="lead">${o.message}</p>
<p>${
    o.known.how === 'metadata_document'
      ? html`This server read <span class="client">${isolated(o.clientName)}</span>’s description from <code>${isolated(o.known.documentHost)}</code>`
      : html`<span class="client">${isolated(o.clientName)}</span> registered itself with this server`
  }; nobody here has checked who runs it, so you are not sent back to it automatically. It said it is at <code>${isolated(o.returnTo)}</code>; go back there yourself if you trust it.</p>
<p class="fine">Error code: <code>${o.error}</code></p>`
  return renderPage(o.title, body)
}
