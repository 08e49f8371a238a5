/**
 * What the limit steps of one gateway share (plan.ts): the store family,
 * the metrics, the client address as both faces derive it, and the
 * overrides of the built-in authorization server's clients.
 */
import { addressBucket } from '../../as/throttle.js'
import type { FaceDeps } from '../../context.js'
import { ClientAddress } from '../../http/trusted-proxies.js'
import { type LimitDeps, StoreOutage } from './plan.js'

/** An IPv6 client is counted by its /64 when no `rate_limit.ipv6_prefix` says otherwise (RFC 6177: one customer holds a /64). */
const DEFAULT_IPV6_PREFIX = 64

export function limitDeps(deps: FaceDeps): LimitDeps {
  const { config } = deps
  const as = config.authorizationServer
  const prefix = as?.rateLimit.ipv6Prefix ?? DEFAULT_IPV6_PREFIX
  // X-Forwarded-For is believed only from trusted_proxies (http/trusted-proxies.ts), as at the authorization server.
  const addresses = new ClientAddress(deps.trustedProxies)
  const overrides = new Map<string, Readonly<Record<string, number>>>()
  for (const c of as?.clients ?? []) if (c.rateLimits !== undefined) overrides.set(c.clientId, c.rateLimits)
  return {
    store: deps.store.trafficLimits,
    metrics: deps.metrics,
    now: () => deps.clock.now(),
    address: (req) => addressBucket(addresses.of(req), prefix),
    overrides,
    outage: new StoreOutage(deps.log),
  }
}
