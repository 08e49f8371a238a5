/**
 * Stranger's text on a page (an agent's tool name and arguments, a binding message, RFC 9396
 * authorization details) written so that what the person reads is exactly what is there:
 * every character that would not show as itself (controls, bidi embeddings, overrides and
 * isolates, zero-width and other format characters, line and paragraph separators) becomes its
 * JSON escape (`\u202e`). The `html` template escapes markup; this makes the hidden visible.
 */

const INVISIBLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu
/** As INVISIBLE, but a line break stays: in JSON text it is layout (a string's own is already `\n`). */
const INVISIBLE_IN_JSON = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu

function escapeCharacter(c: string): string {
  return `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`
}

/** A raw string (a name, a message) with every invisible character, line breaks too, as its escape. */
export function visibleText(text: string): string {
  return text.replace(INVISIBLE, escapeCharacter)
}

/** JSON text (JSON.stringify's, indented) with every invisible character but its line breaks as its escape: still the same JSON. */
export function visibleJson(text: string): string {
  return text.replace(INVISIBLE_IN_JSON, escapeCharacter)
}
