import { BlockList, isIP } from 'node:net'
import type { IncomingMessage } from 'node:http'

/**
 * The address of the person's browser, for per-IP rate limits (failed logins,
 * wrong device codes: RFC 8628 5.1). The peer address, unless the peer is a
 * trusted proxy (`gateway.trusted_proxies`); then the right-most
 * X-Forwarded-For entry that is not itself a trusted proxy, since only the
 * entries our own proxies appended can be believed.
 */
export class ClientAddress {
  readonly #trusted: BlockList
  readonly #any: boolean

  constructor(trustedProxies: readonly string[]) {
    this.#trusted = new BlockList()
    for (const range of trustedProxies) {
      const [address = '', prefix] = range.split('/')
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
      if (prefix === undefined) this.#trusted.addAddress(address, family)
      else this.#trusted.addSubnet(address, Number(prefix), family)
    }
    this.#any = trustedProxies.length > 0
  }

  #isTrusted(address: string): boolean {
    const family = isIP(address)
    if (family === 0) return false
    return this.#trusted.check(address, family === 6 ? 'ipv6' : 'ipv4')
  }

  of(req: IncomingMessage): string {
    const peer = normalize(req.socket.remoteAddress ?? 'unknown')
    if (!this.#any || !this.#isTrusted(peer)) return peer
    const header = req.headers['x-forwarded-for']
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').map((h) => normalize(h.trim()))
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i] ?? ''
      if (isIP(hop) === 0) return peer
      if (!this.#isTrusted(hop)) return hop
    }
    return peer
  }
}

/** `::ffff:1.2.3.4` → `1.2.3.4`, so one client has one key whichever socket family it used. */
function normalize(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address
}

