/**
 * Stranger's text on a page (an agent's tool name and arguments, a binding message, RFC 9396
 * authorization details) written so that what the person reads is exactly what is there:
 * every character that would not show as itself (controls, bidi embeddings, overrides and
 * isolates, zero-width and other format characters, line and paragraph separators) becomes its
 * JSON escape (`\u202e`). The `html` template escapes markup; this makes the hidden visible.
 */

/**
 * Also what shows as nothing or as a plain space though it is not one: default-ignorable characters
 * that are not format characters (Hangul fillers U+3164 and U+FFA0, variation selectors, the combining
 * grapheme joiner), the blank braille pattern U+2800, and every space but U+0020 (U+00A0, U+3000):
 * `"bob\u3164"` is another account than `"bob"`, and must not read as it.
 */
const HIDDEN = String.raw`[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\u2800]|(?! )\p{Zs}`
const INVISIBLE = new RegExp(HIDDEN, 'gu')
/** As INVISIBLE, but a line break stays: in JSON text it is layout (a string's own is already `\n`). */
const INVISIBLE_IN_JSON = new RegExp(String.raw`(?!\n)(?:${HIDDEN})`, 'gu')

/** Each UTF-16 unit as `\uXXXX`: a character beyond U+FFFF (a tag, a variation selector) as its surrogate pair, as JSON writes it. */
function escapeCharacter(c: string): string {
  let out = ''
  for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`
  return out
}

/** A raw string (a name, a message) with every invisible character, line breaks too, as its escape. */
export function visibleText(text: string): string {
  return text.replace(INVISIBLE, escapeCharacter)
}

/** JSON text (JSON.stringify's, indented) with every invisible character but its line breaks as its escape: still the same JSON. */
export function visibleJson(text: string): string {
  return text.replace(INVISIBLE_IN_JSON, escapeCharacter)
}
