import { html, type SafeHtml } from './html.js'

/**
 * A date formatter built on its first use. Building the first
 * Intl.DateTimeFormat of a process loads ICU's locale and time zone data
 * (20 to 40 ms of CPU on Node 20); built at import, every `bearward start`
 * paid for it, and for every page module's own formatter, before serving a
 * request, whether or not a page with a date is ever shown.
 */
export function lazyDateFormat(locale: string, options: Intl.DateTimeFormatOptions): { format(date: Date): string } {
  let built: Intl.DateTimeFormat | null = null
  return {
    format: (date) => {
      built ??= new Intl.DateTimeFormat(locale, options)
      return built.format(date)
    },
  }
}

/** `29 November 2026` (UTC): how every page writes a day. */
export const DAY = lazyDateFormat('en-GB', { day: 'numeric', month: 'long', year: 'numeric', timeZone: 'UTC' })

/** `at` as a day in a `<time>` element that carries the exact instant. */
export function dayElement(at: Date): SafeHtml {
  return html`<time datetime="${at.toISOString()}">${DAY.format(at)}</time>`
}
