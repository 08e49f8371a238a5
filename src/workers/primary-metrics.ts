import { Counter, Gauge, Metrics } from '../metrics.js'
import { addableOnly, mergeExpositions, renderExposition, type Exposition, type MergePart } from './metrics-merge.js'

/**
 * The primary's /metrics: every worker's latest series added up
 * (metrics-merge.ts), the totals left by workers that exited, and the
 * primary's own series (reloads and config time are the primary's: the
 * workers' copies of those two are left out of the merge).
 */
export class PrimaryMetrics {
  readonly reloads: Counter
  readonly configTime: Gauge
  readonly workers = new Gauge('bearward_workers', 'Worker processes configured (`workers`)')
  readonly serving = new Gauge('bearward_workers_serving', 'Worker processes started and serving')
  readonly restarts = new Counter('bearward_worker_restarts_total', 'Worker processes that exited unasked and were started again')
  /** Totals left by exited workers (counters and histograms only). */
  #retired: Exposition = new Map()

  constructor() {
    const names = new Metrics()
    this.reloads = names.reloads
    this.configTime = names.configInfo
  }

  /** A worker exited: its counters and histograms stay in the totals, so they never go down. */
  retire(last: Exposition): void {
    this.#retired = mergeExpositions([
      { exposition: this.#retired, worker: null },
      { exposition: addableOnly(last), worker: null },
    ])
  }

  /** The exposition text, from each running worker's latest metrics (by worker index). */
  render(latest: ReadonlyArray<{ worker: number; exposition: Exposition }>): string {
    const parts: MergePart[] = [{ exposition: this.#retired, worker: null }]
    for (const { worker, exposition } of latest) parts.push({ exposition, worker: String(worker) })
    const merged = renderExposition(mergeExpositions(parts, new Set([this.reloads.name, this.configTime.name])))
    const own = [this.reloads, this.configTime, this.workers, this.serving, this.restarts].map((m) => m.render()).join('\n')
    return `${merged}${own}\n`
  }
}
