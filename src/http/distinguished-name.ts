/**
 * Distinguished names as RFC 4514 strings: the subject of a client
 * certificate rendered for logs and `tls_client_auth_subject_dn`, and the
 * configured DN parsed back, so the two are compared as names (attribute
 * types by OID, values case-insensitively with insignificant spaces
 * removed: caseIgnoreMatch, RFC 4517 4.2.11) rather than as strings whose
 * spelling varies (`cn=` or `CN=`, `,` or `, `, escapes).
 *
 * @see https://www.rfc-editor.org/rfc/rfc4514
 * @see https://www.rfc-editor.org/rfc/rfc8705#section-2.1.2
 */
import { DerError, type DistinguishedName, type NameAttribute } from './der.js'

/** RFC 4514 3's keywords, plus the few other names certificates commonly carry. */
const KEYWORDS: ReadonlyArray<readonly [string, string]> = [
  ['CN', '2.5.4.3'],
  ['L', '2.5.4.7'],
  ['ST', '2.5.4.8'],
  ['O', '2.5.4.10'],
  ['OU', '2.5.4.11'],
  ['C', '2.5.4.6'],
  ['STREET', '2.5.4.9'],
  ['DC', '0.9.2342.19200300.100.1.25'],
  ['UID', '0.9.2342.19200300.100.1.1'],
]

/** Accepted when parsing a configured DN; rendered as the OID (RFC 4514 2.3). */
const EXTRA_NAMES: ReadonlyArray<readonly [string, string]> = [
  ['EMAILADDRESS', '1.2.840.113549.1.9.1'],
  ['E', '1.2.840.113549.1.9.1'],
  ['SERIALNUMBER', '2.5.4.5'],
  ['SN', '2.5.4.4'],
  ['GN', '2.5.4.42'],
  ['GIVENNAME', '2.5.4.42'],
  ['TITLE', '2.5.4.12'],
]

const KEYWORD_OF = new Map(KEYWORDS.map(([k, oid]) => [oid, k]))
const OID_OF = new Map([...KEYWORDS, ...EXTRA_NAMES])

/** RFC 4514 2.4: escape what the string form reserves. */
function escapeValue(value: string): string {
  let out = ''
  for (let i = 0; i < value.length; i++) {
    const c = value[i] as string
    const code = c.charCodeAt(0)
    if ('"+,;<>\\'.includes(c) || (c === '#' && i === 0) || (c === ' ' && (i === 0 || i === value.length - 1))) out += `\\${c}`
    else if (code < 0x20 || code === 0x7f) out += `\\${code.toString(16).padStart(2, '0')}`
    else out += c
  }
  return out
}

function renderAttribute(a: NameAttribute): string {
  const keyword = KEYWORD_OF.get(a.oid)
  if (keyword !== undefined && a.value !== null) return `${keyword}=${escapeValue(a.value)}`
  return `${a.oid}=#${a.der.toString('hex')}`
}

/**
 * The RFC 4514 string of a name: RDNs from the last to the first, joined by
 * `,`; the attributes of one RDN by `+`.
 * @see https://www.rfc-editor.org/rfc/rfc4514#section-2.1
 */
export function formatDistinguishedName(name: DistinguishedName): string {
  return [...name]
    .reverse()
    .map((rdn) => rdn.map(renderAttribute).join('+'))
    .join(',')
}

/** A value as caseIgnoreMatch compares it: lower case, inner runs of spaces one space, no outer spaces. */
function foldValue(value: string): string {
  return value.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim()
}

/** One attribute in the form names are compared in. */
function canonicalAttribute(oid: string, value: string | null, der: Buffer | null): string {
  return `${oid}=${value !== null ? JSON.stringify(foldValue(value)) : `#${der?.toString('hex') ?? ''}`}`
}

/**
 * The form two names are compared in: one line per RDN in RFC 4514 order,
 * each RDN's attributes sorted (a set has no order).
 */
export function canonicalName(name: DistinguishedName): string {
  return [...name]
    .reverse()
    .map((rdn) =>
      rdn
        .map((a) => canonicalAttribute(a.oid, a.value, a.der))
        .sort()
        .join('+'),
    )
    .join('\n')
}

/** Split `text` at unescaped `sep` characters. */
function splitUnescaped(text: string, sep: string): string[] {
  const parts: string[] = []
  let current = ''
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string
    if (c === '\\' && i + 1 < text.length) {
      current += c + (text[i + 1] as string)
      i++
    } else if (c === sep) {
      parts.push(current)
      current = ''
    } else {
      current += c
    }
  }
  parts.push(current)
  return parts
}

/** RFC 4514 3: `\` before a special character, or two hex digits (a UTF-8 octet). */
function unescapeValue(text: string): string {
  const bytes: number[] = []
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'))
      continue
    }
    const hex = text.slice(i + 1, i + 3)
    if (/^[0-9a-fA-F]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16))
      i += 2
    } else if (i + 1 < text.length) {
      bytes.push(...Buffer.from(text[i + 1] as string, 'utf8'))
      i++
    } else {
      throw new DerError('a DN ends with a lone backslash')
    }
  }
  return Buffer.from(bytes).toString('utf8')
}

/**
 * The canonical form of a configured RFC 4514 DN (see {@link canonicalName}).
 * Attribute types are RFC 4514 keywords (any case), a few common others
 * (`emailAddress`, `serialNumber`) or dotted OIDs; a `#hex` value is
 * compared as the DER it encodes.
 * @throws DerError naming what is wrong
 */
export function canonicalDistinguishedName(text: string): string {
  if (text.trim() === '') throw new DerError('the DN is empty')
  const rdns = splitUnescaped(text, ',').map((rdn) =>
    splitUnescaped(rdn, '+')
      .map((ava) => {
        const eq = ava.indexOf('=')
        if (eq <= 0) throw new DerError(`\`${ava.trim()}\` is not type=value`)
        const type = ava.slice(0, eq).trim()
        const oid = /^\d+(\.\d+)+$/.test(type) ? type : OID_OF.get(type.toUpperCase())
        if (oid === undefined) throw new DerError(`unknown attribute type \`${type}\`: use a keyword of RFC 4514 3 or a dotted OID`)
        const raw = ava.slice(eq + 1).trim()
        if (raw.startsWith('#')) {
          if (!/^#(?:[0-9a-fA-F]{2})+$/.test(raw)) throw new DerError(`\`${type}\` has a malformed #hex value`)
          return canonicalAttribute(oid, null, Buffer.from(raw.slice(1), 'hex'))
        }
        return canonicalAttribute(oid, unescapeValue(raw), null)
      })
      .sort()
      .join('+'),
  )
  return rdns.join('\n')
}
