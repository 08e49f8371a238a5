/**
 * Which addresses a fetch of a URL chosen by a stranger may connect to: only
 * global unicast ones. Used by the Client ID Metadata Document fetcher (and
 * meant for any other fetch of a client-supplied URL, such as a client's
 * `jwks_uri`): without it, a `client_id` naming `https://169.254.169.254/...`
 * or this host's own address makes the server send requests into its own
 * network (server-side request forgery).
 *
 * An address is public when every one of these holds:
 * - it is a plain IPv4 dotted quad or an IPv6 address without a zone;
 * - ipaddr.js classifies it as `unicast` (its `range()` knows the special
 *   ranges), and it is in none of the entries of IANA's IPv4 and IPv6
 *   Special-Purpose Address Registries listed below (refused even where
 *   the registry marks an entry globally reachable: anycast service
 *   addresses, AS112 and AMT serve no documents), nor multicast;
 * - an IPv6 address is in 2000::/3, the only block IANA allocates for
 *   global unicast, unless it embeds an IPv4 address that the connection
 *   really goes to: IPv4-mapped (`::ffff:a.b.c.d`), NAT64's well-known
 *   prefix (`64:ff9b::a.b.c.d`), 6to4 (`2002:AABB:CCDD::`) and Teredo
 *   (`2001:0:SSSS:SSSS::` with the client address obfuscated in the last
 *   32 bits). Each embedded IPv4 is checked as IPv4: `2002:7f00:1::` is
 *   loopback. IPv4-compatible (`::a.b.c.d`, deprecated), IPv4-translated
 *   and the local-use NAT64 prefix (64:ff9b:1::/48, whose embedding depends
 *   on the operator's prefix length) are refused whatever they embed;
 * - it is not one of this host's own interface addresses
 *   (`os.networkInterfaces()`, read again every few seconds): a public
 *   address of this host would reach its own services.
 *
 * What is checked must be what is connected to (DNS rebinding): the lookup
 * below resolves a name once, drops every address that is not public, and
 * hands only the rest to the connection; an IP literal, for which Node does
 * not call the lookup, is checked before connecting.
 *
 * @see https://www.iana.org/assignments/iana-ipv4-special-registry/
 * @see https://www.iana.org/assignments/iana-ipv6-special-registry/
 * @see https://www.rfc-editor.org/rfc/rfc6890
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { isIP, type LookupFunction } from 'node:net'
import { type NetworkInterfaceInfo, networkInterfaces } from 'node:os'
import ipaddr from 'ipaddr.js'
import { buildConnector } from 'undici'
import { parseIPv6 } from './trusted-proxies.js'

/** One entry of a special-purpose registry: the block and what it is. */
type Block = readonly [cidr: string, name: string]

/** IANA IPv4 Special-Purpose Address Registry (RFC 6890 and updates), and multicast. */
const IPV4_SPECIAL: readonly Block[] = [
  ['0.0.0.0/8', 'this network'],
  ['10.0.0.0/8', 'private-use'],
  ['100.64.0.0/10', 'shared address space (CGNAT)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private-use'],
  ['192.0.0.0/24', 'IETF protocol assignments'],
  ['192.0.2.0/24', 'documentation (TEST-NET-1)'],
  ['192.31.196.0/24', 'AS112-v4'],
  ['192.52.193.0/24', 'AMT'],
  ['192.88.99.0/24', 'deprecated 6to4 relay anycast'],
  ['192.168.0.0/16', 'private-use'],
  ['192.175.48.0/24', 'direct delegation AS112 service'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation (TEST-NET-2)'],
  ['203.0.113.0/24', 'documentation (TEST-NET-3)'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
  ['255.255.255.255/32', 'limited broadcast'],
]

/**
 * IANA IPv6 Special-Purpose Address Registry, and multicast and site-local.
 * The embedded-IPv4 forms (mapped, NAT64 well-known, 6to4, Teredo) are
 * judged by their IPv4 before this table is consulted.
 */
const IPV6_SPECIAL: readonly Block[] = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'IPv4-compatible (deprecated)'],
  ['::ffff:0:0/96', 'IPv4-mapped'],
  ['::ffff:0:0:0/96', 'IPv4-translated'],
  ['64:ff9b::/96', 'NAT64 well-known prefix'],
  ['64:ff9b:1::/48', 'local-use NAT64'],
  ['100::/64', 'discard-only'],
  ['100:0:0:1::/64', 'dummy IPv6 prefix'],
  ['2001::/23', 'IETF protocol assignments'],
  ['2001::/32', 'Teredo'],
  ['2001:db8::/32', 'documentation'],
  ['2002::/16', '6to4'],
  ['2620:4f:8000::/48', 'direct delegation AS112 service'],
  ['3fff::/20', 'documentation'],
  ['5f00::/16', 'segment routing (SRv6) SIDs'],
  ['fc00::/7', 'unique-local'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local (deprecated)'],
  ['ff00::/8', 'multicast'],
]

type Parsed<T> = readonly [net: T, bits: number, name: string]
const V4_BLOCKS: readonly Parsed<ipaddr.IPv4>[] = IPV4_SPECIAL.map(([cidr, name]) => [...ipaddr.IPv4.parseCIDR(cidr), name] as const)
const V6_BLOCKS: readonly Parsed<ipaddr.IPv6>[] = IPV6_SPECIAL.map(([cidr, name]) => [...ipaddr.IPv6.parseCIDR(cidr), name] as const)
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3')
const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96')
const SIX_TO_FOUR = ipaddr.IPv6.parseCIDR('2002::/16')
const TEREDO = ipaddr.IPv6.parseCIDR('2001::/32')

function v4FromWords(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff])
}

/** Why an IPv4 address is not global unicast, or undefined when it is. */
function v4Problem(ip: ipaddr.IPv4): string | undefined {
  const range = ip.range()
  if (range !== 'unicast') return `${ip.toString()} is ${range}`
  for (const [net, bits, name] of V4_BLOCKS) if (ip.match(net, bits)) return `${ip.toString()} is ${name} (${net.toString()}/${bits})`
  return undefined
}

/** The IPv4 addresses an IPv6 address really leads to, when it is one of the embedding forms; null otherwise. */
function embeddedV4(ip: ipaddr.IPv6): { form: string; addresses: ipaddr.IPv4[] } | null {
  const p = ip.parts as [number, number, number, number, number, number, number, number]
  if (ip.isIPv4MappedAddress()) return { form: 'IPv4-mapped', addresses: [ip.toIPv4Address()] }
  if (ip.match(NAT64_WELL_KNOWN)) return { form: 'NAT64', addresses: [v4FromWords(p[6], p[7])] }
  // RFC 3056 2: 2002:V4ADDR::/48.
  if (ip.match(SIX_TO_FOUR)) return { form: '6to4', addresses: [v4FromWords(p[1], p[2])] }
  // RFC 4380 4: 2001:0000:<server IPv4>:<flags>:<port ^ 0xffff>:<client IPv4 ^ 0xffffffff>.
  if (ip.match(TEREDO)) return { form: 'Teredo', addresses: [v4FromWords(p[2], p[3]), v4FromWords(p[6] ^ 0xffff, p[7] ^ 0xffff)] }
  return null
}

/** Why an IPv6 address is not global unicast, or undefined when it is. */
function v6Problem(ip: ipaddr.IPv6): string | undefined {
  const embedded = embeddedV4(ip)
  if (embedded !== null) {
    for (const v4 of embedded.addresses) {
      const why = v4Problem(v4)
      if (why !== undefined) return `${embedded.form} ${ip.toString()} embeds ${why}`
    }
    return undefined
  }
  for (const [net, bits, name] of V6_BLOCKS) if (ip.match(net, bits)) return `${ip.toString()} is ${name} (${net.toString()}/${bits})`
  const range = ip.range()
  if (range !== 'unicast') return `${ip.toString()} is ${range}`
  if (!ip.match(GLOBAL_UNICAST_V6)) return `${ip.toString()} is outside 2000::/3 (global unicast)`
  return undefined
}

/**
 * The address as Node connects to it: only what `net.isIP` accepts (no
 * `0x7f.1`, no `127.1`), no zone. IPv6 is read by the house parser, not
 * ipaddr.js's, which reads the IPv4-compatible `::8.8.8.8` as the mapped
 * `::ffff:8.8.8.8` (another destination).
 */
function parseStrict(address: string): ipaddr.IPv4 | ipaddr.IPv6 | string {
  const family = isIP(address)
  if (family === 0) return `${JSON.stringify(address)} is not an IP address`
  if (address.includes('%')) return `${address} is scoped to an interface`
  if (family === 4) return ipaddr.IPv4.parse(address)
  const words = parseIPv6(address)
  if (words === null) return `${JSON.stringify(address)} is not an IP address`
  return new ipaddr.IPv6(words.flatMap((w) => [w >>> 16, w & 0xffff]))
}

/**
 * Why an address is not a global unicast one by the registries (this
 * host's own addresses aside: see {@link PublicAddresses}), or undefined.
 */
export function specialPurposeProblem(address: string): string | undefined {
  const ip = parseStrict(address)
  if (typeof ip === 'string') return ip
  return ip.kind() === 'ipv4' ? v4Problem(ip as ipaddr.IPv4) : v6Problem(ip as ipaddr.IPv6)
}

/** Every address a connection to `ip` may end at, normalised: itself and any IPv4 it embeds. */
function destinations(ip: ipaddr.IPv4 | ipaddr.IPv6): string[] {
  if (ip.kind() === 'ipv4') return [ip.toNormalizedString()]
  const v6 = ip as ipaddr.IPv6
  return [v6.toNormalizedString(), ...(embeddedV4(v6)?.addresses.map((a) => a.toNormalizedString()) ?? [])]
}

/** A refused destination: the connection is never attempted. */
export class NonPublicAddressError extends Error {
  readonly code = 'ERR_NON_PUBLIC_ADDRESS'
}

export interface PublicAddressOptions {
  /**
   * Host names (or IP literals) that may be connected to whatever they
   * resolve to: the operator's own exceptions (`allow_hosts`).
   */
  allowHosts?: Iterable<string>
  /** This host's interfaces (default `os.networkInterfaces`; tests pass their own). */
  interfaces?: () => NodeJS.Dict<NetworkInterfaceInfo[]>
  /** How long the interface list is reused before it is read again (default 5 s). */
  interfacesTtlMs?: number
}

/** How often this host's addresses are read again: often enough to see an address added at run time. */
const INTERFACES_TTL_MS = 5000

/**
 * The address rule of one fetcher: {@link problem} for an address, and a
 * {@link lookup} and {@link connector} that apply it to every connection.
 */
export class PublicAddresses {
  readonly #allowHosts: ReadonlySet<string>
  readonly #interfaces: () => NodeJS.Dict<NetworkInterfaceInfo[]>
  readonly #ttlMs: number
  #own: { addresses: ReadonlySet<string>; readAt: number } | null = null

  constructor(options: PublicAddressOptions = {}) {
    this.#allowHosts = new Set([...(options.allowHosts ?? [])].map((h) => unbracket(h).toLowerCase()))
    this.#interfaces = options.interfaces ?? networkInterfaces
    this.#ttlMs = options.interfacesTtlMs ?? INTERFACES_TTL_MS
  }

  /** True when `hostname` (a name or an IP literal, brackets or not) is one of `allowHosts`. */
  allowsHost(hostname: string): boolean {
    return this.#allowHosts.has(unbracket(hostname).toLowerCase())
  }

  /** Why a connection to `address` is refused, or undefined when it may be made. */
  problem(address: string): string | undefined {
    const special = specialPurposeProblem(address)
    if (special !== undefined) return special
    const ip = parseStrict(address) as ipaddr.IPv4 | ipaddr.IPv6
    const own = this.#ownAddresses()
    for (const d of destinations(ip)) if (own.has(d)) return `${address} is an address of this host`
    return undefined
  }

  #ownAddresses(): ReadonlySet<string> {
    const now = performance.now()
    if (this.#own !== null && now - this.#own.readAt < this.#ttlMs) return this.#own.addresses
    const addresses = new Set<string>()
    for (const list of Object.values(this.#interfaces())) {
      for (const info of list ?? []) {
        const ip = parseStrict(info.address.split('%')[0] ?? '')
        if (typeof ip !== 'string') for (const d of destinations(ip)) addresses.add(d)
      }
    }
    this.#own = { addresses, readAt: now }
    return addresses
  }

  /**
   * A `lookup` for net/tls/undici connections: resolves once and passes on
   * only the addresses that may be connected to (all of them for an allowed
   * host), so the connection uses exactly what was checked.
   */
  readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses: LookupAddress[]) => {
      if (err) return callback(err, '', 0)
      const usable = this.allowsHost(hostname) ? addresses : addresses.filter((a) => this.problem(a.address) === undefined)
      if (usable.length === 0) return callback(new NonPublicAddressError(`${hostname} resolves to no public address`), '', 0)
      if (options.all === true) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, usable)
      const first = usable[0] as LookupAddress
      callback(null, first.address, first.family)
    })
  }

  /**
   * An undici connector (`new Agent({ connect: addresses.connector({...}) })`)
   * that refuses a non-public IP literal before connecting (Node calls no
   * lookup for a literal) and resolves names with {@link lookup}.
   */
  connector(options: buildConnector.BuildOptions = {}): buildConnector.connector {
    const inner = buildConnector({ ...options, lookup: this.lookup })
    return (connect, callback) => {
      const host = unbracket(connect.hostname)
      if (isIP(host) !== 0 && !this.allowsHost(host)) {
        const why = this.problem(host)
        if (why !== undefined) return callback(new NonPublicAddressError(why), null)
      }
      inner(connect, callback)
    }
  }
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
}
