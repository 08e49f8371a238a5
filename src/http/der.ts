/**
 * The few parts of an X.509 certificate mutual TLS reads by value: the
 * subject's distinguished name and the subjectAltName entries. Node's
 * `X509Certificate.subject` and `.subjectAltName` are display strings whose
 * escaping has changed between releases (CVE-2021-44532); a comparison that
 * decides client authentication reads the DER itself, with every length
 * checked against its parent: a self-signed certificate is the client's own
 * bytes.
 *
 * @see https://www.rfc-editor.org/rfc/rfc5280#section-4.1
 */

/** One DER element: its tag byte and where its contents lie in the buffer. */
interface Tlv {
  readonly tag: number
  /** Where the element (its tag) begins. */
  readonly offset: number
  readonly start: number
  readonly end: number
}

/** Thrown on malformed DER; callers treat the certificate as absent. */
export class DerError extends Error {}

/** The element at `offset`, which must end by `limit`. */
function readTlv(buf: Buffer, offset: number, limit: number): Tlv {
  if (offset + 2 > limit) throw new DerError('truncated')
  const tag = buf[offset] as number
  if ((tag & 0x1f) === 0x1f) throw new DerError('high tag numbers are not used in certificates')
  let length = buf[offset + 1] as number
  let start = offset + 2
  if (length & 0x80) {
    const octets = length & 0x7f
    if (octets === 0 || octets > 4 || start + octets > limit) throw new DerError('bad length')
    length = 0
    for (let i = 0; i < octets; i++) length = length * 256 + (buf[start + i] as number)
    start += octets
  }
  const end = start + length
  if (end > limit) throw new DerError('element overruns its parent')
  return { tag, offset, start, end }
}

/** The children of a constructed element. */
function children(buf: Buffer, parent: Tlv): Tlv[] {
  const out: Tlv[] = []
  let at = parent.start
  while (at < parent.end) {
    const child = readTlv(buf, at, parent.end)
    out.push(child)
    at = child.end
  }
  return out
}

function expect(tlv: Tlv | undefined, tag: number): Tlv {
  if (tlv === undefined || tlv.tag !== tag) throw new DerError(`expected tag 0x${tag.toString(16)}`)
  return tlv
}

const SEQUENCE = 0x30
const SET = 0x31
const OID = 0x06
const OCTET_STRING = 0x04
const BOOLEAN = 0x01

/** Dotted-decimal text of an OBJECT IDENTIFIER's contents. */
function oidText(bytes: Buffer): string {
  if (bytes.length === 0) throw new DerError('empty OID')
  const parts: number[] = []
  let value = 0
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number
    value = value * 128 + (b & 0x7f)
    if (value > Number.MAX_SAFE_INTEGER / 128) throw new DerError('OID arc too large')
    if ((b & 0x80) === 0) {
      if (parts.length === 0) parts.push(value < 80 ? Math.floor(value / 40) : 2, value < 80 ? value % 40 : value - 80)
      else parts.push(value)
      value = 0
    } else if (i === bytes.length - 1) {
      throw new DerError('OID ends mid-arc')
    }
  }
  return parts.join('.')
}

/** The string of a directory string value (RFC 5280 4.1.2.4), or null for another type. */
function stringValue(buf: Buffer, tlv: Tlv): string | null {
  const bytes = buf.subarray(tlv.start, tlv.end)
  switch (tlv.tag) {
    case 0x0c: // UTF8String
      return bytes.toString('utf8')
    case 0x13: // PrintableString
    case 0x16: // IA5String
    case 0x12: // NumericString
    case 0x1a: // VisibleString
    case 0x14: // TeletexString, read as Latin-1 as OpenSSL does
      return bytes.toString('latin1')
    case 0x1e: {
      // BMPString: UTF-16BE
      if (bytes.length % 2 !== 0) throw new DerError('odd BMPString')
      const swapped = Buffer.from(bytes)
      swapped.swap16()
      return swapped.toString('utf16le')
    }
    default:
      return null
  }
}

/** One attribute of a relative distinguished name. */
export interface NameAttribute {
  /** Dotted-decimal attribute type. */
  readonly oid: string
  /** The value as text when it is a string type, else null (rendered as `#hex`). */
  readonly value: string | null
  /** The value's whole DER element (RFC 4514 2.4's `#` form). */
  readonly der: Buffer
}

/** A distinguished name: RDNs in the certificate's order (most significant first), each a set of attributes. */
export type DistinguishedName = readonly (readonly NameAttribute[])[]

/** Parse a Name (a SEQUENCE of RDN SETs). */
export function parseName(buf: Buffer, name: Tlv): DistinguishedName {
  expect(name, SEQUENCE)
  return children(buf, name).map((rdn) => {
    expect(rdn, SET)
    const attributes = children(buf, rdn).map((ava) => {
      const [type, value] = children(buf, expect(ava, SEQUENCE))
      const oid = oidText(buf.subarray(expect(type, OID).start, (type as Tlv).end))
      if (value === undefined) throw new DerError('attribute without a value')
      return { oid, value: stringValue(buf, value), der: buf.subarray(value.offset, value.end) }
    })
    if (attributes.length === 0) throw new DerError('empty RDN')
    return attributes
  })
}

/** subjectAltName entries mutual TLS client authentication may match (RFC 8705 2.1.2). */
export interface SubjectAltNames {
  readonly dns: readonly string[]
  readonly uri: readonly string[]
  /** Addresses in Node's text form (`10.0.0.1`, `2001:db8::1`). */
  readonly ip: readonly string[]
  readonly email: readonly string[]
}

/** What {@link parseCertificateNames} reads. */
export interface CertificateNames {
  readonly subject: DistinguishedName
  readonly san: SubjectAltNames
}

const SUBJECT_ALT_NAME = '2.5.29.17'

/** IPv4 or IPv6 octets as text (IPv6 with its longest zero run compressed, as RFC 5952 writes it). */
export function ipText(bytes: Buffer): string | null {
  if (bytes.length === 4) return [...bytes].join('.')
  if (bytes.length !== 16) return null
  const groups: number[] = []
  for (let i = 0; i < 16; i += 2) groups.push(bytes.readUInt16BE(i))
  let bestStart = -1
  let bestLength = 1
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLength) {
      bestStart = i
      bestLength = j - i
    }
    i = j
  }
  const hex = groups.map((g) => g.toString(16))
  if (bestStart === -1) return hex.join(':')
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLength).join(':')}`
}

/** The subject and the subjectAltName entries of a DER certificate. @throws DerError when it is malformed. */
export function parseCertificateNames(der: Buffer): CertificateNames {
  const cert = readTlv(der, 0, der.length)
  const [tbs] = children(der, expect(cert, SEQUENCE))
  const fields = children(der, expect(tbs, SEQUENCE))
  // [0] version is optional (v1 certificates omit it).
  const at = fields[0]?.tag === 0xa0 ? 1 : 0
  // serialNumber, signature, issuer, validity, subject, subjectPublicKeyInfo
  const subject = parseName(der, expect(fields[at + 4], SEQUENCE))
  const dns: string[] = []
  const uri: string[] = []
  const ip: string[] = []
  const email: string[] = []
  const extensions = fields.slice(at + 6).find((f) => f.tag === 0xa3)
  if (extensions !== undefined) {
    const [list] = children(der, extensions)
    for (const ext of children(der, expect(list, SEQUENCE))) {
      const parts = children(der, expect(ext, SEQUENCE))
      const id = oidText(der.subarray(expect(parts[0], OID).start, (parts[0] as Tlv).end))
      if (id !== SUBJECT_ALT_NAME) continue
      const value = expect(parts[1]?.tag === BOOLEAN ? parts[2] : parts[1], OCTET_STRING)
      const names = readTlv(der, value.start, value.end)
      for (const name of children(der, expect(names, SEQUENCE))) {
        const bytes = der.subarray(name.start, name.end)
        if (name.tag === 0x81) email.push(bytes.toString('latin1'))
        else if (name.tag === 0x82) dns.push(bytes.toString('latin1'))
        else if (name.tag === 0x86) uri.push(bytes.toString('latin1'))
        else if (name.tag === 0x87) {
          const text = ipText(bytes)
          if (text !== null) ip.push(text)
        }
      }
    }
  }
  return { subject, san: { dns, uri, ip, email } }
}
