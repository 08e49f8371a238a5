/**
 * A small Prometheus text-format registry (exposition format 0.0.4). The
 * metrics object lives for the process and is shared by every Runtime, so a
 * reload does not reset counters.
 */

type Labels = Readonly<Record<string, string>>

/** The rendered label set, `a="1",b="2"`: also the series key. */
export function labelKey(labels: Labels): string {
  const names = Object.keys(labels).sort()
  return names.map((n) => `${n}="${escapeLabel(labels[n] ?? '')}"`).join(',')
}

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
}

export class Counter {
  readonly #values = new Map<string, number>()
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  inc(labels: Labels = {}, by = 1): void {
    this.incKey(labelKey(labels), by)
  }
  /** inc() with a label set already rendered by labelKey() (hot path). */
  incKey(key: string, by = 1): void {
    this.#values.set(key, (this.#values.get(key) ?? 0) + by)
  }
  get(labels: Labels = {}): number {
    return this.#values.get(labelKey(labels)) ?? 0
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`]
    for (const [key, value] of this.#values) lines.push(`${this.name}${key ? `{${key}}` : ''} ${value}`)
    return lines.join('\n')
  }
}

export class Gauge {
  readonly #values = new Map<string, number>()
  constructor(
    readonly name: string,
    readonly help: string,
  ) {}
  set(value: number, labels: Labels = {}): void {
    this.#values.set(labelKey(labels), value)
  }
  /** Move a series by `by` with a label set already rendered by labelKey() (hot path): counts several owners share (Runtimes across a reload). */
  addKey(key: string, by: number): void {
    this.#values.set(key, (this.#values.get(key) ?? 0) + by)
  }
  /** Forget a series (a label set that no longer exists, e.g. a target a reload removed). */
  delete(labels: Labels = {}): void {
    this.#values.delete(labelKey(labels))
  }
  get(labels: Labels = {}): number | undefined {
    return this.#values.get(labelKey(labels))
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`]
    for (const [key, value] of this.#values) lines.push(`${this.name}${key ? `{${key}}` : ''} ${value}`)
    return lines.join('\n')
  }
}

export class Histogram {
  /** Per series: observations per bucket (not cumulative; render() adds them up), sum and count. */
  readonly #series = new Map<string, { counts: number[]; sum: number; count: number }>()
  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[],
  ) {}
  observe(labels: Labels, value: number): void {
    this.observeKey(labelKey(labels), value)
  }
  /** observe() with a label set already rendered by labelKey() (hot path). */
  observeKey(key: string, value: number): void {
    let s = this.#series.get(key)
    if (s === undefined) {
      s = { counts: new Array<number>(this.buckets.length).fill(0), sum: 0, count: 0 }
      this.#series.set(key, s)
    }
    // Only the first bucket that holds the value counts it: a request pays
    // for a step or two of this scan, not one write per bucket.
    const buckets = this.buckets
    for (let i = 0; i < buckets.length; i++) {
      if (value <= (buckets[i] as number)) {
        s.counts[i] = (s.counts[i] as number) + 1
        break
      }
    }
    s.sum += value
    s.count += 1
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`]
    for (const [key, s] of this.#series) {
      const sep = key ? ',' : ''
      let cumulative = 0
      this.buckets.forEach((b, i) => {
        cumulative += s.counts[i] ?? 0
        lines.push(`${this.name}_bucket{${key}${sep}le="${b}"} ${cumulative}`)
      })
      lines.push(`${this.name}_bucket{${key}${sep}le="+Inf"} ${s.count}`)
      lines.push(`${this.name}_sum${key ? `{${key}}` : ''} ${s.sum}`)
      lines.push(`${this.name}_count${key ? `{${key}}` : ''} ${s.count}`)
    }
    return lines.join('\n')
  }
}

/** The highest status code node:http lets a response carry. */
const MAX_STATUS = 999

/** The metrics bearward exposes on admin_listen /metrics. */
export class Metrics {
  readonly requests = new Counter('bearward_requests_total', 'Requests by route and outcome')
  readonly requestDuration = new Histogram(
    'bearward_request_duration_seconds',
    'Request latency by route and outcome',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  )
  readonly tokensIssued = new Counter('bearward_tokens_issued_total', 'Access tokens issued by grant type')
  readonly reloads = new Counter('bearward_config_reloads_total', 'Config reloads by result')
  readonly storeErrors = new Counter('bearward_store_errors_total', 'Store operations that failed')
  readonly requestsAborted = new Counter(
    'bearward_requests_aborted_total',
    'Requests whose client went away before its request body was complete, by face (as, gateway)',
  )
  readonly replicaWaitTimeouts = new Counter(
    'bearward_store_replica_wait_timeouts_total',
    'Revocation writes that no replica confirmed within store.replica_wait.timeout (answered 503)',
  )
  readonly tokenValidations = new Counter('bearward_token_validations_total', 'Token validations by result')
  readonly exchangesEnded = new Counter(
    'bearward_exchanges_ended_total',
    'Open responses and WebSocket tunnels the gateway ended because their access token was revoked or expired, by reason',
  )
  readonly configInfo = new Gauge('bearward_config_last_reload_timestamp_seconds', 'When the config in use was loaded')
  readonly registrationsRefused = new Counter(
    'bearward_registrations_refused_total',
    'Client registrations refused because registration.max_clients live registered clients exist (503)',
  )
  readonly upstreamHealthy = new Gauge(
    'bearward_upstream_healthy',
    'Whether a pool target of a route takes requests (1) or is ejected (0), by route and target (docs/traffic.md)',
  )
  readonly upstreamConnectFailures = new Counter(
    'bearward_upstream_connect_failures_total',
    'Requests that could not connect to a pool target (refused, reset or timed out before a byte was sent), by route and target',
  )
  readonly signalsReceived = new Counter(
    'bearward_signals_received_total',
    'Security Event Tokens received from Shared Signals transmitters, by outcome (acted, replayed, unknown-subject, ignored, refused)',
  )
  readonly signalActions = new Counter('bearward_signal_actions_total', 'Shared Signals events acted on, by event and action')
  readonly signalPollFailures = new Counter('bearward_signal_poll_failures_total', 'Polls of a Shared Signals transmitter that failed, by transmitter')
  readonly backchannelLogouts = new Counter(
    'bearward_backchannel_logout_total',
    'Back-channel logout token deliveries by outcome: delivered, failed (will be retried), dropped (given up, address refused, or the queue was full)',
  )
  readonly cibaPings = new Counter(
    'bearward_ciba_pings_total',
    'OpenID CIBA ping notifications to clients by outcome: delivered, failed (will be retried), dropped (given up, address refused, the queue was full)',
  )
  readonly ssfEvents = new Counter(
    'bearward_ssf_events_total',
    'Security Event Tokens bearward transmits to Shared Signals receivers, by outcome: queued, delivered, failed (will be retried), dropped (queue full, refused by the receiver, address refused, given up)',
  )
  readonly registeredClients = new Gauge(
    'bearward_registered_clients',
    'Live self-registered clients in the store, as this process last counted them (at each registration and deletion)',
  )
  readonly inFlight = new Gauge('bearward_in_flight', 'Requests forwarded and not yet finished, by route (routes with max_in_flight or max_streams)')
  readonly openStreams = new Gauge(
    'bearward_open_streams',
    'Long-lived streams open (event streams, MCP listen streams, WebSocket tunnels, gRPC calls), by route (routes with max_in_flight or max_streams)',
  )
  readonly concurrencyRefused = new Counter(
    'bearward_concurrency_refused_total',
    'Requests refused with 503 because a concurrency limit was reached, by route, limit (max_in_flight, max_streams) and scope (route, key)',
  )
  readonly approvals = new Counter(
    'bearward_approvals_total',
    'Approvals (docs/approvals.md) by kind (mcp_tool, ciba) and outcome: requested, again (a retry found the pending one), refused (too many pending), approved, denied, passed (a call or tokens went through), cancelled',
  )
  readonly approvalNotifications = new Counter(
    'bearward_approval_notifications_total',
    'Approval notifications POSTed to approvals.notify, by outcome: delivered, failed (will be retried), dropped (given up or the queue was full)',
  )
  readonly traceSpans = new Counter(
    'bearward_trace_spans_total',
    'Recorded spans by outcome: exported, dropped (the export queue was full) or failed (the collector refused or did not answer)',
  )
  readonly auditEvents = new Counter('bearward_audit_events_total', 'Audit events written, by event (docs/operating.md, "Audit trail")')

  readonly trafficLimitDecisions = new Counter(
    'bearward_traffic_limit_decisions_total',
    'Requests decided by a route rate limit or quota, by route, limit name and result (allowed, limited)',
  )
  readonly trafficLimitStoreFailures = new Counter(
    'bearward_traffic_limit_store_failures_total',
    'Requests of a limited route decided while the store did not answer, by route and result (allowed, refused)',
  )

  /** Per route, per outcome: the rendered label set, built once; requests reuse it. */
  readonly #requestKeys = new Map<string, Map<string, string>>()
  /** Per route, by status code (index 0: aborted): the same label sets, without building the outcome string. */
  readonly #statusKeys = new Map<string, (string | undefined)[]>()

  /**
   * Record one finished request by its status code, or null when the client
   * went away before the answer was complete (outcome "aborted"). The hot
   * path: one map lookup and an array index once the series exists.
   */
  observeResponse(route: string, status: number | null, seconds: number): void {
    if (status !== null && !(Number.isInteger(status) && status >= 100 && status <= MAX_STATUS)) {
      this.observeRequest(route, String(status), seconds)
      return
    }
    let byStatus = this.#statusKeys.get(route)
    if (byStatus === undefined) {
      byStatus = new Array<string | undefined>(MAX_STATUS + 1)
      this.#statusKeys.set(route, byStatus)
    }
    const index = status ?? 0
    let key = byStatus[index]
    if (key === undefined) {
      key = this.#requestKey(route, status === null ? 'aborted' : String(status))
      byStatus[index] = key
    }
    this.requests.incKey(key)
    this.requestDuration.observeKey(key, seconds)
  }

  /** Record one finished request. Hot path: no label sorting or string building after the first. */
  observeRequest(route: string, outcome: string, seconds: number): void {
    const key = this.#requestKey(route, outcome)
    this.requests.incKey(key)
    this.requestDuration.observeKey(key, seconds)
  }

  #requestKey(route: string, outcome: string): string {
    let byOutcome = this.#requestKeys.get(route)
    if (byOutcome === undefined) {
      byOutcome = new Map()
      this.#requestKeys.set(route, byOutcome)
    }
    let key = byOutcome.get(outcome)
    if (key === undefined) {
      key = labelKey({ route, outcome })
      byOutcome.set(outcome, key)
    }
    return key
  }

  render(): string {
    return (
      [
        this.requests,
        this.requestDuration,
        this.tokensIssued,
        this.reloads,
        this.storeErrors,
        this.requestsAborted,
        this.replicaWaitTimeouts,
        this.tokenValidations,
        this.exchangesEnded,
        this.configInfo,
        this.registrationsRefused,
        this.registeredClients,
        this.trafficLimitDecisions,
        this.trafficLimitStoreFailures,
        this.inFlight,
        this.openStreams,
        this.concurrencyRefused,
        this.upstreamHealthy,
        this.upstreamConnectFailures,
        this.signalsReceived,
        this.signalActions,
        this.signalPollFailures,
        this.auditEvents,
        this.backchannelLogouts,
        this.cibaPings,
        this.ssfEvents,
      ]
        .map((m) => m.render())
        .join('\n') + '\n'
    )
  }
}
