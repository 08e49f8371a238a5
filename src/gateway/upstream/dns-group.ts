import { promises as dns } from 'node:dns'
import { isIP } from 'node:net'
import type { Logger } from '../../log.js'
import { errorCode } from './failure.js'
import type { Target, TargetSpec, UpstreamTargets } from './targets.js'

/** The floor on a TTL: an answer with TTL 0 must not make every request resolve again. */
const MIN_TTL_MS = 1000
/** The cap on a TTL, so a record changed upstream is seen within the hour whatever it said. */
const MAX_TTL_MS = 3600_000
/** Names the DNS does not know (/etc/hosts ones, found by getaddrinfo) have no TTL: they are looked up again this often. */
const LOOKUP_REFRESH_MS = 30_000
/** After a resolution failed: try again this soon, with the last good addresses meanwhile. */
const RETRY_AFTER_FAILURE_MS = 5000
/** One name's answers beyond this are ignored: each address is a pool and a checker. */
const MAX_ADDRESSES = 16

/**
 * Addresses a DNS answer may not send the gateway to: link-local ones (the
 * cloud metadata service at 169.254.169.254 and fd00:ec2::254 / fe80::
 * neighbours) and unspecified ones. A target written as such an address is
 * the operator's choice; a name that resolves to one is a poisoned or
 * mistaken record, and is dropped from the answer (and logged).
 */
export function refusedAddress(address: string): boolean {
  if (isIP(address) === 4) return address.startsWith('169.254.') || address.startsWith('0.')
  const a = address.toLowerCase()
  return /^fe[89ab]/.test(a) || a === '::' || a === 'fd00:ec2::254' || a.startsWith('::ffff:169.254.')
}

/** What resolves a name: node:dns's promises API, or a Resolver with `upstreams.dns.servers`. */
export interface NameResolver {
  resolve4(name: string, options: { ttl: true }): Promise<Array<{ address: string; ttl: number }>>
  resolve6(name: string, options: { ttl: true }): Promise<Array<{ address: string; ttl: number }>>
}

/** The resolver of a pool: its `dns.servers`, or the system's. */
export function nameResolver(servers: readonly string[] | null): { resolver: NameResolver; system: boolean } {
  if (servers === null) return { resolver: dns, system: true }
  const resolver = new dns.Resolver({ timeout: 2000, tries: 2 })
  resolver.setServers([...servers])
  return { resolver, system: false }
}

/** The addresses of `name` and how long they hold, or a failure's code. */
async function resolveName(name: string, resolver: NameResolver, system: boolean): Promise<{ addresses: string[]; ttlMs: number } | string> {
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(name, { ttl: true }), resolver.resolve6(name, { ttl: true })])
  const all = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])]
  const answers = all.filter((a) => !refusedAddress(a.address))
  if (answers.length === 0 && all.length > 0) return 'only link-local or unspecified addresses'
  if (answers.length > 0) {
    const ttl = Math.min(...answers.map((a) => a.ttl)) * 1000
    return { addresses: answers.slice(0, MAX_ADDRESSES).map((a) => a.address), ttlMs: Math.min(MAX_TTL_MS, Math.max(MIN_TTL_MS, ttl)) }
  }
  if (system) {
    // A name of /etc/hosts (or mDNS...) is no DNS record: getaddrinfo knows it, without a TTL.
    try {
      const found = (await dns.lookup(name, { all: true })).filter((a) => !refusedAddress(a.address))
      if (found.length > 0) return { addresses: found.slice(0, MAX_ADDRESSES).map((a) => a.address), ttlMs: LOOKUP_REFRESH_MS }
    } catch (err) {
      return errorCode(err)
    }
  }
  return v4.status === 'rejected' ? errorCode(v4.reason) : 'no addresses'
}

/**
 * A target given by host name: each address the name resolves to is a
 * target (its own pool, health and checker), dialled by address with the
 * configured name as Host and TLS server name. The name is resolved again
 * once its TTL ran out, on the first pick after that (time is the Clock's:
 * nothing runs while the route is idle, and no timer is left to leak); a
 * failure keeps the last good addresses. Requests that arrive before the
 * first answer wait for it (`ready`, bounded by the resolver's timeout); a
 * name that never resolved has no target, and is tried again on the next
 * request after a few seconds.
 */
export class DnsGroup {
  readonly #hostname: string
  readonly #scheme: string
  readonly #port: string
  readonly #specFor: (dial: string) => TargetSpec
  readonly #registry: UpstreamTargets
  readonly #resolver: NameResolver
  readonly #system: boolean
  readonly #log: Logger | null
  #targets: Target[] = []
  /** Settles when the first resolution was applied (or failed). */
  readonly ready: Promise<void>
  #addresses: string[] = []
  #expiresAt = 0
  #resolving: Promise<void> | null = null
  #closed = false

  constructor(
    url: URL,
    specFor: (dial: string) => TargetSpec,
    registry: UpstreamTargets,
    resolver: { resolver: NameResolver; system: boolean },
    log: Logger | null,
  ) {
    this.#hostname = url.hostname
    this.#scheme = url.protocol
    this.#port = url.port
    this.#specFor = specFor
    this.#registry = registry
    this.#resolver = resolver.resolver
    this.#system = resolver.system
    this.#log = log
    this.ready = this.refresh()
  }

  /** The targets now; starts a resolution when the last one's TTL ran out. */
  current(): readonly Target[] {
    if (this.#registry.clock.now() >= this.#expiresAt) this.refresh()
    return this.#targets
  }

  /** The resolution under way, if any. */
  get pending(): Promise<void> | null {
    return this.#resolving
  }

  /** Resolve now unless a resolution is under way; the promise settles when its answer is applied. */
  refresh(): Promise<void> {
    this.#resolving ??= this.#resolve()
      .catch((err: unknown) => {
        // Nothing above should throw; if it does, the last addresses stay and the name is tried again later.
        this.settled = true
        this.#expiresAt = this.#registry.clock.now() + RETRY_AFTER_FAILURE_MS
        this.#log?.error({ host: this.#hostname, code: errorCode(err) }, 'upstream name resolution failed')
      })
      .finally(() => {
        this.#resolving = null
      })
    return this.#resolving
  }

  /** The first resolution settled. */
  settled = false

  async #resolve(): Promise<void> {
    // Until it settles, no other request starts one.
    this.#expiresAt = Number.POSITIVE_INFINITY
    const answer = await resolveName(this.#hostname, this.#resolver, this.#system)
    this.settled = true
    if (this.#closed) return
    const now = this.#registry.clock.now()
    if (typeof answer === 'string') {
      this.#expiresAt = now + RETRY_AFTER_FAILURE_MS
      this.#log?.warn({ host: this.#hostname, code: answer, addresses: this.#addresses.length }, 'upstream name did not resolve; keeping the last addresses')
      return
    }
    this.#expiresAt = now + answer.ttlMs
    const addresses = [...new Set(answer.addresses)].sort()
    if (addresses.join(',') === this.#addresses.join(',')) return
    const before = this.#targets
    this.#targets = addresses.map((a) => this.#registry.acquire(this.#specFor(this.#dialOf(a))))
    this.#addresses = addresses
    // Requests already sent keep their target's pool until they settle (undici's close waits).
    for (const target of before) void this.#registry.release(target)
    this.#log?.info({ host: this.#hostname, addresses }, 'upstream name resolved')
  }

  /** `scheme://address:port`, the address in brackets for IPv6. */
  #dialOf(address: string): string {
    const host = isIP(address) === 6 ? `[${address}]` : address
    return `${this.#scheme}//${host}${this.#port === '' ? '' : `:${this.#port}`}`
  }

  close(): Promise<void> {
    this.#closed = true
    const targets = this.#targets
    this.#targets = []
    return Promise.all(targets.map((t) => this.#registry.release(t))).then(() => undefined)
  }
}

/** Whether a target URL names a host to resolve (not an address literal). */
export function isHostName(url: URL): boolean {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  return isIP(host) === 0
}
