/**
 * The one HTML escaper. Every page is built with the `html` tagged template,
 * which escapes every interpolated value unless it is already `SafeHtml`
 * (the output of another `html` call). There is no other way to put text into
 * a page, so a hostile client name, state or username cannot become markup.
 */

/** Markup that is already escaped; only `html` and `attrs` create it. */
export class SafeHtml {
  readonly #value: string
  constructor(value: string) {
    this.#value = value
  }
  toString(): string {
    return this.#value
  }
}

/** What may be interpolated: text (escaped), numbers, SafeHtml, lists of these; null/undefined/false render nothing. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[]

const ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
}

/**
 * Escape text for element content and quoted attribute values (every
 * attribute in our templates is double-quoted, so these five suffice).
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c)
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.toString()
  if (value === null || value === undefined || value === false) return ''
  if (Array.isArray(value)) return (value as readonly HtmlValue[]).map(render).join('')
  return escapeHtml(String(value))
}

/** Tagged template: the literal parts are trusted markup, every `${value}` is escaped. */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let out = strings[0] ?? ''
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '')
  return new SafeHtml(out)
}
