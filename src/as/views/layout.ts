import { html, type SafeHtml } from './html.js'

/**
 * Path of the stylesheet, relative to the page. Every page lives beside the
 * endpoints (`{base_url}/authorize`, `/login`, `/device`, ...), so relative
 * references keep working when public_url has a path prefix.
 */
export const STYLESHEET_HREF = 'assets/bearward.css'

/**
 * The document around every page: viewport for phones, the one stylesheet,
 * no scripts (the CSP in PAGE_HEADERS forbids them), an empty data: icon so
 * browsers do not ask for /favicon.ico. A page served deeper than the others
 * (an identity provider's callback) passes `assetPrefix` (`../../../`) to reach
 * the stylesheet. The referrer meta repeats the
 * header's `same-origin` (see PAGE_HEADERS for why it is not no-referrer).
 */
export function renderPage(title: string, body: SafeHtml, assetPrefix = ''): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<meta name="robots" content="noindex, nofollow">
<title>${title} · bearward</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${assetPrefix}${STYLESHEET_HREF}">
</head>
<body>
<main class="card">
<p class="brand">bearward</p>
${body}
</main>
</body>
</html>
`.toString()
}

/** Hidden inputs for a form (CSRF token, the pending request, the user code). */
export function hiddenFields(fields: Readonly<Record<string, string>>): SafeHtml {
  return html`${Object.entries(fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}">\n`)}`
}
