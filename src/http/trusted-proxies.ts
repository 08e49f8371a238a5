import type { IncomingMessage } from 'node:http'
import { isIP, type Socket } from 'node:net'

/**
 * Who may tell us who the client is, for both faces. A proxy in front of
 * bearward reports the original client in `X-Forwarded-*` / `Forwarded`
 * (RFC 7239); those headers are believed only when the TCP peer is one of
 * `gateway.trusted_proxies`, otherwise any client could claim any address.
 * The gateway uses this to decide which forwarding headers to pass on, the
 * authorization server to find the address its per-address throttles key on
 * (`ClientAddress`).
 *
 * The matcher is built once per Runtime (FaceDeps.trustedProxies). It
 * compares precomputed 32-bit words rather than asking `node:net`'s
 * BlockList, which allocates a SocketAddress per lookup (docs/performance.md,
 * "Trusted-proxy ranges are compared as 32-bit words").
 */

/** One IPv4 range: address and mask as unsigned 32-bit numbers. */
interface V4Range {
  readonly net: number
  readonly mask: number
}

/** One IPv6 range: address and mask as four unsigned 32-bit words. */
interface V6Range {
  readonly net: readonly [number, number, number, number]
  readonly mask: readonly [number, number, number, number]
}

const MAPPED_V4_PREFIX = '::ffff:'

/**
 * The TCP peer of a request as an IP string, with IPv4-mapped IPv6 addresses
 * (`::ffff:10.0.0.1`, what a dual-stack listener reports) turned back into
 * plain IPv4 so they match IPv4 rules and read naturally in headers.
 */
export function peerAddress(socket: Pick<Socket, 'remoteAddress'>): string | undefined {
  return normalizeAddress(socket.remoteAddress)
}

/** Strip the `::ffff:` prefix from an IPv4-mapped IPv6 address; other values pass unchanged. */
export function normalizeAddress(address: string | undefined): string | undefined {
  if (address !== undefined && address.length > MAPPED_V4_PREFIX.length && address.charCodeAt(0) === 58 /* : */) {
    const lower = address.toLowerCase()
    if (lower.startsWith(MAPPED_V4_PREFIX) && lower.includes('.', MAPPED_V4_PREFIX.length)) {
      return lower.slice(MAPPED_V4_PREFIX.length)
    }
  }
  return address
}

/** Parse dotted-quad IPv4 into an unsigned 32-bit number; null when it is not one. */
export function parseIPv4(text: string): number | null {
  const parts = text.split('.')
  if (parts.length !== 4) return null
  let value = 0
  for (const part of parts) {
    if (part.length === 0 || part.length > 3) return null
    let octet = 0
    for (let i = 0; i < part.length; i++) {
      const c = part.charCodeAt(i) - 48
      if (c < 0 || c > 9) return null
      octet = octet * 10 + c
    }
    if (octet > 255) return null
    value = value * 256 + octet
  }
  return value
}

/**
 * Parse an IPv6 address (RFC 4291 2.2: `::` compression, an embedded IPv4
 * tail, an optional `%zone` which is ignored) into four 32-bit words.
 */
export function parseIPv6(text: string): [number, number, number, number] | null {
  const zone = text.indexOf('%')
  const addr = zone === -1 ? text : text.slice(0, zone)
  const groups: number[] = []
  const halves = addr.split('::')
  if (halves.length > 2) return null
  const parseGroups = (part: string, allowV4Tail: boolean): number[] | null => {
    if (part === '') return []
    const out: number[] = []
    const fields = part.split(':')
    for (let i = 0; i < fields.length; i++) {
      const field = fields[i] ?? ''
      if (allowV4Tail && i === fields.length - 1 && field.includes('.')) {
        const v4 = parseIPv4(field)
        if (v4 === null) return null
        out.push(Math.floor(v4 / 65536), v4 % 65536)
        continue
      }
      const n = parseHexGroup(field)
      if (n === null) return null
      out.push(n)
    }
    return out
  }
  const head = parseGroups(halves[0] ?? '', halves.length === 1)
  if (head === null) return null
  if (halves.length === 1) {
    if (head.length !== 8) return null
    groups.push(...head)
  } else {
    const tail = parseGroups(halves[1] ?? '', true)
    if (tail === null || head.length + tail.length > 7) return null
    groups.push(...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail)
  }
  const w = (i: number): number => ((groups[i] ?? 0) * 65536 + (groups[i + 1] ?? 0)) >>> 0
  return [w(0), w(2), w(4), w(6)]
}

/** One IPv6 group: 1 to 4 hex digits. */
function parseHexGroup(field: string): number | null {
  if (field.length === 0 || field.length > 4) return null
  let n = 0
  for (let i = 0; i < field.length; i++) {
    const c = field.charCodeAt(i)
    let digit: number
    if (c >= 48 && c <= 57) digit = c - 48
    else if (c >= 97 && c <= 102) digit = c - 87
    else if (c >= 65 && c <= 70) digit = c - 55
    else return null
    n = n * 16 + digit
  }
  return n
}

function v4Mask(prefix: number): number {
  return prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0
}

function v6Mask(prefix: number): [number, number, number, number] {
  const word = (i: number): number => v4Mask(Math.max(0, Math.min(32, prefix - 32 * i)))
  return [word(0), word(1), word(2), word(3)]
}

/**
 * Matches an address against `trusted_proxies`: exact IPv4/IPv6 addresses and
 * CIDR ranges (`10.0.0.0/8`, `fd00::/8`). An IPv4-mapped IPv6 range
 * (`::ffff:10.0.0.0/104`) is stored as the IPv4 range it denotes.
 */
export class TrustedProxies {
  readonly #exact = new Set<string>()
  readonly #v4: V4Range[] = []
  readonly #v6: V6Range[] = []
  /** True when nothing is trusted: every lookup is answered without parsing. */
  readonly empty: boolean

  /** @throws TypeError naming the entry when one is neither an IP address nor a CIDR range. */
  constructor(entries: readonly string[]) {
    for (const entry of entries) this.#add(entry.trim())
    this.empty = this.#v4.length === 0 && this.#v6.length === 0
  }

  #add(entry: string): void {
    const slash = entry.indexOf('/')
    const addressText = slash === -1 ? entry : entry.slice(0, slash)
    const prefixText = slash === -1 ? null : entry.slice(slash + 1)
    const family = isIP(addressText)
    const maxPrefix = family === 4 ? 32 : 128
    const prefix = prefixText === null ? maxPrefix : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : -1
    const words = family === 6 ? parseIPv6(addressText) : null
    if (family === 0 || (family === 6 && words === null) || prefix < 0 || prefix > maxPrefix) {
      throw new TypeError(`trusted_proxies: "${entry}" is not an IP address or a CIDR range`)
    }
    if (family === 4) {
      this.#addV4(parseIPv4(addressText) ?? 0, prefix)
      return
    }
    const w = words as [number, number, number, number]
    if (w[0] === 0 && w[1] === 0 && w[2] === 0xffff && prefix >= 96) {
      // ::ffff:a.b.c.d/n is the IPv4 range a.b.c.d/(n-96); peers are normalized to IPv4.
      this.#addV4(w[3], prefix - 96)
      return
    }
    const mask = v6Mask(prefix)
    this.#v6.push({
      net: [(w[0] & mask[0]) >>> 0, (w[1] & mask[1]) >>> 0, (w[2] & mask[2]) >>> 0, (w[3] & mask[3]) >>> 0],
      mask,
    })
    if (prefix === 128) this.#exact.add(addressText.toLowerCase())
  }

  #addV4(address: number, prefix: number): void {
    const mask = v4Mask(prefix)
    this.#v4.push({ net: (address & mask) >>> 0, mask })
    if (prefix === 32) {
      this.#exact.add(`${address >>> 24}.${(address >>> 16) & 255}.${(address >>> 8) & 255}.${address & 255}`)
    }
  }

  /** Whether `address` (as Node reports a peer; IPv4-mapped accepted) is trusted. */
  has(address: string | undefined): boolean {
    if (address === undefined || this.empty) return false
    const addr = normalizeAddress(address) ?? address
    if (this.#exact.has(addr)) return true
    if (addr.includes(':')) {
      if (this.#v6.length === 0) return false
      const words = parseIPv6(addr)
      if (words === null) return false
      for (const { net, mask } of this.#v6) {
        if (
          (words[0] & mask[0]) >>> 0 === net[0] &&
          (words[1] & mask[1]) >>> 0 === net[1] &&
          (words[2] & mask[2]) >>> 0 === net[2] &&
          (words[3] & mask[3]) >>> 0 === net[3]
        ) {
          return true
        }
      }
      return false
    }
    if (this.#v4.length === 0) return false
    const value = parseIPv4(addr)
    if (value === null) return false
    for (const { net, mask } of this.#v4) {
      if ((value & mask) >>> 0 === net) return true
    }
    return false
  }
}

/**
 * The address of the client behind our proxies, for per-address limits
 * (failed logins, wrong device codes: RFC 8628 5.1; client authentication;
 * registration). The peer address, unless the peer is a trusted proxy; then
 * the right-most X-Forwarded-For entry that is not itself a trusted proxy,
 * since only the entries our own proxies appended can be believed.
 * IPv4-mapped addresses are reported as IPv4, so one client has one key
 * whichever socket family it used.
 */
export class ClientAddress {
  readonly #trusted: TrustedProxies

  constructor(trusted: TrustedProxies) {
    this.#trusted = trusted
  }

  of(req: IncomingMessage): string {
    const peer = peerAddress(req.socket) ?? 'unknown'
    if (!this.#trusted.has(peer)) return peer
    const header = req.headers['x-forwarded-for']
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',')
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = normalizeAddress((hops[i] ?? '').trim()) ?? ''
      if (isIP(hop) === 0) return peer
      if (!this.#trusted.has(hop)) return hop
    }
    return peer
  }
}
