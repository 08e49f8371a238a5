import type { ServerResponse } from 'node:http'
import { Forbidden, type OAuthError } from '../../errors.js'
import { sendHtml, sendRedirect } from '../../http/reply.js'
import { messagePage } from '../views/message.js'

/**
 * How the browser-facing endpoints answer: HTML pages (with PAGE_HEADERS:
 * strict CSP, no framing, no referrer to other sites) and redirects, each optionally setting
 * cookies. Failures become error pages in the same style as the other pages,
 * never JSON: a person is reading them.
 */

function setCookies(res: ServerResponse, cookies: readonly string[]): void {
  if (cookies.length > 0) res.setHeader('set-cookie', [...cookies])
}

export function showPage(
  res: ServerResponse,
  status: number,
  page: string,
  options: { cookies?: readonly string[]; headers?: Readonly<Record<string, string>> } = {},
): void {
  setCookies(res, options.cookies ?? [])
  sendHtml(res, status, page, options.headers)
}

export function redirect(res: ServerResponse, location: string, status: 302 | 303, cookies: readonly string[] = []): void {
  setCookies(res, cookies)
  sendRedirect(res, location, status)
}

const TITLES: Readonly<Record<number, string>> = {
  400: 'This request cannot be completed',
  403: 'This form has expired',
  404: 'Page not found',
  405: 'Method not allowed',
  413: 'Request too large',
  429: 'Too many attempts',
  500: 'Something went wrong',
  503: 'Temporarily unavailable',
}

/** What a person can do about each kind of failure. */
const ADVICE: Readonly<Record<number, string>> = {
  400: 'Go back to the application and try again. If this keeps happening, contact the application’s developer.',
  403: 'The form was not sent from this site, or it has expired. Go back, reload the page and try again.',
  429: 'Too many attempts, try again later.',
  500: 'An unexpected error happened on our side. Please try again in a moment.',
  503: 'The service cannot complete sign-ins right now. Please try again in a moment.',
}

/**
 * Render an OAuthError as an error page (status, its headers such as Allow or
 * Retry-After). `assetPrefix` for a page served below the others' level (see
 * renderPage), so it finds the stylesheet.
 */
export function showError(res: ServerResponse, err: OAuthError, cookies: readonly string[] = [], assetPrefix = ''): void {
  const title = TITLES[err.status] ?? TITLES[400] ?? 'Error'
  const advice = ADVICE[err.status]
  const message = err.status === 400 && err.description !== undefined ? `${err.description}.` : (advice ?? err.description ?? title)
  const page = messagePage({
    title,
    message,
    ...(err.status === 400 && advice !== undefined ? { extra: advice } : {}),
    ...(err.error !== '' && err.status < 500 && err.status !== 403 && err.status !== 429 ? { detail: err.error } : {}),
    ...(assetPrefix === '' ? {} : { assetPrefix }),
  })
  showPage(res, err.status, page, { cookies, headers: err.headers })
}

/** 403 for a POST whose CSRF token or Origin is wrong; nothing was changed. */
export function showForbidden(res: ServerResponse): void {
  showError(res, new Forbidden())
}
