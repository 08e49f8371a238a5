/**
 * What the limit steps of one gateway share (plan.ts): the store family,
 * the metrics, the client address as both faces derive it, and the
 * overrides of the built-in authorization server's clients.
 */
import { AddressBuckets, DEFAULT_IPV6_PREFIX } from '../../http/address-bucket.js'
import type { FaceDeps } from '../../context.js'
import { ClientAddress } from '../../http/trusted-proxies.js'
import { type LimitDeps, StoreOutage } from './plan.js'

export function limitDeps(deps: FaceDeps): LimitDeps {
  const { config } = deps
  const as = config.authorizationServer
  // X-Forwarded-For is believed only from trusted_proxies (http/trusted-proxies.ts), as at the authorization server.
  const addresses = new AddressBuckets(new ClientAddress(deps.trustedProxies), as?.rateLimit.ipv6Prefix ?? DEFAULT_IPV6_PREFIX)
  const overrides = new Map<string, Readonly<Record<string, number>>>()
  for (const c of as?.clients ?? []) if (c.rateLimits !== undefined) overrides.set(c.clientId, c.rateLimits)
  return {
    store: deps.store.trafficLimits,
    metrics: deps.metrics,
    now: () => deps.clock.now(),
    address: (req) => addresses.of(req),
    overrides,
    outage: new StoreOutage(deps.log),
  }
}
