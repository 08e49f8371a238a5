/**
 * The JSON of an MCP body, read so that no other parser can read it
 * differently: strict UTF-8 (no replacement characters, no BOM), RFC 8259
 * syntax (JSON.parse), and no object with a repeated member name anywhere.
 * JSON.parse keeps the last of two `name` members, a lenient upstream parser
 * may keep the first: the gateway would judge one tool and the server call
 * another. Names are compared after unescaping (`"n\u0061me"` is `name`).
 * A `__proto__` member is refused too: a parser that assigns members to a
 * plain object turns it into the object's prototype, whose members then
 * read as the object's own.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8259#section-4
 */

/** Why a body is not JSON the gateway can judge; null when it is. */
export type JsonProblem = 'not utf-8' | 'not json' | 'duplicate member' | 'proto member'

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** The parsed value, or the problem. */
export function parseStrictJson(body: Buffer): { value: unknown } | { problem: JsonProblem } {
  let text: string
  try {
    text = UTF8.decode(body)
  } catch {
    return { problem: 'not utf-8' }
  }
  let value: unknown
  try {
    // A BOM stays in the text (ignoreBOM) and JSON.parse refuses it.
    value = JSON.parse(text)
  } catch {
    return { problem: 'not json' }
  }
  const problem = memberProblem(text)
  return problem === null ? { value } : { problem }
}

/** One open container while scanning: an object's member names so far, or null for an array. */
type Frame = { names: Set<string>; expectName: boolean } | null

/**
 * Scan text that JSON.parse accepted for repeated or `__proto__` member
 * names. Only strings and brackets matter; the syntax is known to be valid.
 */
function memberProblem(text: string): JsonProblem | null {
  const stack: Frame[] = []
  // A string ends at the first quote not escaped. Found with indexOf (native,
  // not a character at a time), keeping the next backslash at hand: a quote
  // before it ends the string, one after it may be the escaped one.
  let backslash = text.indexOf('\\')
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22 /* " */) {
      let j = i + 1
      let escaped = false
      for (;;) {
        const quote = text.indexOf('"', j)
        if (backslash !== -1 && backslash < j) backslash = text.indexOf('\\', j)
        if (quote === -1) {
          j = text.length
          break
        }
        if (backslash === -1 || backslash > quote) {
          j = quote
          break
        }
        escaped = true
        j = backslash + 2
      }
      const top = stack.at(-1)
      if (top?.expectName) {
        const raw = text.slice(i + 1, j)
        const name = escaped ? (JSON.parse(text.slice(i, j + 1)) as string) : raw
        if (name === '__proto__') return 'proto member'
        if (top.names.has(name)) return 'duplicate member'
        top.names.add(name)
        top.expectName = false
      }
      i = j
    } else if (c === 0x7b /* { */) {
      stack.push({ names: new Set(), expectName: true })
    } else if (c === 0x5b /* [ */) {
      stack.push(null)
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop()
    } else if (c === 0x2c /* , */) {
      const top = stack.at(-1)
      if (top) top.expectName = true
    }
  }
  return null
}

/** A JSON number token (RFC 8259 6), matched where a value starts outside a string. */
const NUMBER_TOKEN = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y

/** A decimal number's value as `<digits>e<exponent>` (no leading or trailing zeros; `0` for zero, whatever its sign). */
function decimalValue(literal: string): string {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)
  if (m === null) return literal
  const fraction = m[3] ?? ''
  let digits = `${m[2]}${fraction}`.replace(/^0+/, '')
  if (digits === '') return '0'
  let exponent = Number(m[4] ?? '0') - fraction.length
  const trailing = /0+$/.exec(digits)?.[0].length ?? 0
  digits = digits.slice(0, digits.length - trailing)
  exponent += trailing
  return `${m[1]}${digits}e${exponent}`
}

/**
 * The first number in `text` (JSON that parseStrictJson accepted) whose
 * decimal value is not the one JSON.parse gave it, as ECMAScript writes that
 * double back (`0.10000000000000001`, `1e-400`); null when every number is
 * exact. `1.0`, `1e0` and `-0` are the values `1` and `0` and pass. A
 * parser with decimals or big numbers (Python's Decimal, Java's BigDecimal,
 * Go's json.Number) reads the digits as sent: an approval bound to what
 * JSON.parse read would pass a value the person never saw.
 */
export function inexactNumber(text: string): string | null {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x22 /* " */) {
      let j = i + 1
      while (j < text.length && text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c ? 2 : 1
      i = j
    } else if (c === 0x2d /* - */ || (c >= 0x30 && c <= 0x39)) {
      NUMBER_TOKEN.lastIndex = i
      const literal = NUMBER_TOKEN.exec(text)?.[0]
      if (literal === undefined) continue
      if (decimalValue(literal) !== decimalValue(String(Number(literal)))) return literal
      i += literal.length - 1
    }
  }
  return null
}
