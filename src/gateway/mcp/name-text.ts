/**
 * A tool or prompt name as a server may read it. Both TypeScript SDKs look
 * names up by exact string; a server written otherwise may trim, fold case,
 * normalise Unicode (NFKC: `ｄｅｌｅｔｅ` is `delete`) or drop invisible
 * characters. So the gateway refuses what only a lenient reading would
 * resolve (controls, invisible and format characters, lone surrogates,
 * whitespace other than an inner space), and judges the rest under both
 * readings: the name as sent and its fold, against rule keys folded alike.
 * A name in another case or width needs the scopes of the one it folds to
 * (issue #38.3); folding only adds rules, it never takes one away.
 *
 * @see https://modelcontextprotocol.io/specification/2025-11-25/server/tools#tool-names
 * @see https://www.unicode.org/reports/tr15/#Norm_Forms
 */

/** Characters no name is spelled with: C0/C1 controls, format and default-ignorable characters (zero-width, BOM, bidi), lone surrogates, whitespace but U+0020. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cs}]|(?! )\p{White_Space}/u

/** Why `name` is not one the gateway can judge; null when it is. */
export function nameProblem(name: string): string | null {
  if (INVISIBLE.test(name)) return 'a name with a control, invisible or whitespace character'
  if (name.startsWith(' ') || name.endsWith(' ')) return 'a name with surrounding spaces'
  return null
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/

/** Compatibility-normalised and case-folded: the name a lenient server may take `name` for. */
export function foldName(name: string): string {
  // Printable ASCII is its own NFKC form, and its case fold is its lower case.
  if (PRINTABLE_ASCII.test(name)) return name.toLowerCase()
  return name.normalize('NFKC').toUpperCase().toLowerCase().normalize('NFKC')
}

/** The spellings a server may read `name` as: itself and its fold. */
export function nameReadings(name: string): readonly string[] {
  const folded = foldName(name)
  return folded === name ? [name] : [name, folded]
}
