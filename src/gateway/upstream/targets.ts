import { isIP } from 'node:net'
import { Pool } from 'undici'
import { systemClock, type Clock } from '../../clock.js'
import type { RouteConfig } from '../../config/validated-config.js'
import type { Logger } from '../../log.js'
import { labelKey, type Metrics } from '../../metrics.js'
import { HealthChecker } from './health-check.js'
import { TargetHealth } from './target-health.js'
import { WebSocketUpstream } from './websocket.js'

/** How a pool target is reached: the address (or name) dialled, and what the upstream is told it is. */
export interface TargetSpec {
  readonly route: RouteConfig
  /** The origin connected to: the configured one, or `scheme://address:port` for a resolved host name. */
  readonly dial: string
  /** `host[:port]` as configured: the Host header and health checks name it. */
  readonly host: string
  /** TLS server name (the configured host name; the address for an IP literal); undefined for http. */
  readonly servername: string | undefined
  /** The route's pool options for this origin (plan/upstreams.ts poolOptions). */
  readonly options: Pool.Options
  /** What besides the origin makes two pools differ (CA file, timeouts, HTTP/2): part of the key. */
  readonly optionsKey: string
  /** How a WebSocket handshake reaches this target (the CA and timeouts are those of optionsKey). */
  readonly websocket: { readonly ca: string | null; readonly handshakeTimeoutMs: number }
}

/**
 * One target of one route's pool: its connection pool, health and active
 * checker. Shared by every Runtime that plans the same route with the same
 * target and settings (so a reload keeps its connections and its health),
 * and closed when the last of them releases it.
 */
export class Target {
  readonly key: string
  readonly route: string
  /** The origin dialled, for logs and the `target` label of bearward_upstream_healthy. */
  readonly label: string
  readonly pool: Pool
  readonly health: TargetHealth
  /** The Host header to send when the dialled origin is an address found for a host name; null: undici's own. */
  readonly hostHeader: string | null
  readonly servername: string | undefined
  /** `host[:port]` as configured: the Host of a WebSocket handshake sent here (unless preserve_host). */
  readonly host: string
  /** WebSocket upgrades balanced to this target (node:http, a connection of their own each). */
  readonly ws: WebSocketUpstream
  readonly checker: HealthChecker | null
  refs = 0
  readonly #counted: (() => void) | null

  constructor(
    key: string,
    spec: TargetSpec,
    clock: Clock,
    onChange: (target: Target, healthy: boolean, reason: string) => void,
    metrics: Metrics | null = null,
  ) {
    this.key = key
    this.route = spec.route.name
    this.label = spec.dial
    this.pool = new Pool(spec.dial, spec.options)
    const settings = spec.route.upstreamPool?.health ?? { path: null, intervalMs: 5000, timeoutMs: 2000, unhealthyAfter: 3, healthyAfter: 2 }
    this.health = new TargetHealth(clock, settings, (healthy, reason) => onChange(this, healthy, reason))
    this.hostHeader = new URL(spec.dial).host === spec.host ? null : spec.host
    this.servername = spec.servername
    this.host = spec.host
    // An IP literal is no TLS name (RFC 6066 3): no SNI, the address is checked.
    const tlsName = spec.servername === undefined || isIP(spec.servername) !== 0 ? '' : spec.servername
    this.ws = new WebSocketUpstream({ url: new URL(spec.dial), servername: tlsName, ...spec.websocket })
    const path = settings.path
    const labels = labelKey({ route: this.route, target: this.label })
    this.#counted = metrics === null ? null : () => metrics.upstreamConnectFailures.incKey(labels)
    this.checker =
      path === null ? null : new HealthChecker({ pool: this.pool, host: spec.host, servername: spec.servername }, { ...settings, path }, this.health)
  }

  /** A request (pool-dispatch.ts) or a WebSocket handshake could not connect to this target: counted, and held against its health. */
  connectFailed(code: string): void {
    this.#counted?.()
    this.health.connectFailed(code)
  }
}

/** What the registry reports to. */
export interface TargetsDeps {
  readonly log: Logger | null
  readonly metrics: Metrics | null
  readonly clock: Clock
}

/**
 * Every pool target of the process, kept across reloads (ProcessState holds
 * it): a Runtime acquires the targets its plans use when it is built and
 * releases them when it closes, after its requests drained. A target whose
 * route, address and settings are unchanged is the same object in the old
 * and the new Runtime; one no Runtime holds any more is closed (pool,
 * checker, gauge series).
 */
export class UpstreamTargets {
  readonly #targets = new Map<string, Target>()
  readonly #deps: TargetsDeps
  readonly #listeners = new Set<(target: Target, healthy: boolean) => void>()

  constructor(deps: Partial<TargetsDeps> = {}) {
    this.#deps = { log: deps.log ?? null, metrics: deps.metrics ?? null, clock: deps.clock ?? systemClock }
  }

  get log(): Logger | null {
    return this.#deps.log
  }

  get clock(): Clock {
    return this.#deps.clock
  }

  /** Targets held by some Runtime (tests: nothing is left after the last release). */
  get size(): number {
    return this.#targets.size
  }

  /** Health changes, as they are logged (tests await them instead of sleeping). */
  onChange(listener: (target: Target, healthy: boolean) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  acquire(spec: TargetSpec): Target {
    const health = spec.route.upstreamPool?.health
    const key = [spec.route.name, spec.dial, spec.host, spec.servername ?? '', spec.optionsKey, JSON.stringify(health ?? null)].join('\n')
    let target = this.#targets.get(key)
    if (target === undefined) {
      target = new Target(key, spec, this.#deps.clock, (t, healthy, reason) => this.#changed(t, healthy, reason), this.#deps.metrics)
      this.#targets.set(key, target)
      this.#deps.metrics?.upstreamHealthy.set(1, { route: target.route, target: target.label })
      target.checker?.start()
    }
    target.refs++
    return target
  }

  /** One holder is done with `target`; the last one closes it. */
  release(target: Target): Promise<void> {
    target.refs--
    if (target.refs > 0 || this.#targets.get(target.key) !== target) return Promise.resolve()
    this.#targets.delete(target.key)
    target.checker?.stop()
    this.#deps.metrics?.upstreamHealthy.delete({ route: target.route, target: target.label })
    return target.pool.close().catch(() => target.pool.destroy())
  }

  #changed(target: Target, healthy: boolean, reason: string): void {
    // A target no Runtime holds any more leaves no series behind.
    if (this.#targets.get(target.key) !== target) return
    this.#deps.metrics?.upstreamHealthy.set(healthy ? 1 : 0, { route: target.route, target: target.label })
    const fields = { route: target.route, target: target.label, reason }
    if (healthy) this.#deps.log?.info(fields, 'upstream target healthy again')
    else this.#deps.log?.warn(fields, 'upstream target ejected')
    for (const listener of this.#listeners) listener(target, healthy)
  }
}
