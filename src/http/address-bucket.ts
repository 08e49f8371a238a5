/**
 * The bucket a per-address count counts a client in, shared by both faces:
 * the authorization server's failure throttles and registration, and the
 * gateway's rate limits and concurrency limits. One function, so an address
 * is never counted one way at sign-in and another at the gateway.
 */
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'
import { type ClientAddress, normalizeAddress, parseIPv6 } from './trusted-proxies.js'

/** An IPv6 client is counted by its /64 unless `rate_limit.ipv6_prefix` says otherwise (RFC 6177: one customer holds a /64). */
export const DEFAULT_IPV6_PREFIX = 64

/**
 * What a per-address counter counts: an IPv4 address as itself (an
 * IPv4-mapped IPv6 address counts as its IPv4), an IPv6 address as its
 * network of `ipv6Prefix` bits (`2001:db8:1:2::/64`). One IPv6 customer
 * usually holds a whole /64 (RFC 6177), 2^64 addresses: counted one by one,
 * a single machine could rotate through them and never reach a limit.
 * Anything that is not an IP address is counted as written.
 */
export function addressBucket(address: string, ipv6Prefix: number): string {
  const plain = normalizeAddress(address) ?? address
  if (isIP(plain) !== 6) return plain
  const words = parseIPv6(plain)
  if (words === null) return plain
  const groups: string[] = []
  for (let i = 0; i < 8; i++) {
    const bit = i * 16
    const keep = Math.max(0, Math.min(16, ipv6Prefix - bit))
    const word = words[i >> 1] ?? 0
    const group = i % 2 === 0 ? word >>> 16 : word & 0xffff
    groups.push((keep === 0 ? 0 : group & ((0xffff << (16 - keep)) & 0xffff)).toString(16))
  }
  return `${groups.join(':')}/${ipv6Prefix}`
}

/** The bucket of a request's client address (read behind `trusted_proxies` only). */
export class AddressBuckets {
  readonly #addresses: ClientAddress
  readonly #ipv6Prefix: number

  constructor(addresses: ClientAddress, ipv6Prefix: number) {
    this.#addresses = addresses
    this.#ipv6Prefix = ipv6Prefix
  }

  of(req: IncomingMessage): string {
    return addressBucket(this.#addresses.of(req), this.#ipv6Prefix)
  }
}
