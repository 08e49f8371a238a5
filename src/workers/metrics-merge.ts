/**
 * One /metrics for several worker processes: each worker renders its own
 * registry (src/metrics.ts, Prometheus text format 0.0.4); the primary
 * parses the texts and adds them up.
 *
 * - counters: summed per series;
 * - histograms: summed per series and bucket (every worker runs the same
 *   code, so the buckets are the same; the `le` label is part of the
 *   series), `_sum` and `_count` summed;
 * - gauges: not added (a sum or an average means something different for
 *   each gauge); each worker's value is kept, labelled `worker="N"`.
 *
 * A worker that exits leaves its counters and histograms behind (its last
 * answer), so the totals never go down when a worker is restarted.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped'

export interface Family {
  name: string
  help: string | null
  type: MetricType
  /** Series (`name{labels}` as rendered) → value, in the order first seen. */
  samples: Map<string, number>
}

/** Families by name, in the order first seen. */
export type Exposition = Map<string, Family>

const TYPES: readonly MetricType[] = ['counter', 'gauge', 'histogram', 'summary', 'untyped']

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity
  if (text === '-Inf') return -Infinity
  return Number(text)
}

function renderValue(value: number): string {
  if (value === Infinity) return '+Inf'
  if (value === -Infinity) return '-Inf'
  return String(value)
}

/** The metric name of a sample line's series (`a_bucket{le="1"}` → `a_bucket`). */
function seriesName(series: string): string {
  const brace = series.indexOf('{')
  return brace === -1 ? series : series.slice(0, brace)
}

/** The family a sample belongs to: histogram and summary samples carry suffixes. */
function belongsTo(family: Family | undefined, name: string): boolean {
  if (family === undefined) return false
  if (name === family.name) return true
  if (family.type !== 'histogram' && family.type !== 'summary') return false
  return [`${family.name}_bucket`, `${family.name}_sum`, `${family.name}_count`].includes(name)
}

function familyOf(e: Exposition, name: string): Family {
  let f = e.get(name)
  if (f === undefined) {
    f = { name, help: null, type: 'untyped', samples: new Map() }
    e.set(name, f)
  }
  return f
}

/** Parse text in the Prometheus text format (what src/metrics.ts renders). Lines it cannot read are left out. */
export function parseExposition(text: string): Exposition {
  const e: Exposition = new Map()
  let current: Family | undefined
  for (const raw of text.split('\n')) {
    const line = raw.trim()
    if (line === '') continue
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line)
    if (meta !== null) {
      const [, kind, name = '', rest = ''] = meta
      current = familyOf(e, name)
      if (kind === 'HELP') current.help = rest
      else current.type = (TYPES as readonly string[]).includes(rest) ? (rest as MetricType) : 'untyped'
      continue
    }
    if (line.startsWith('#')) continue
    // `series value [timestamp]`; label values may hold spaces, so a labelled series ends at its last `}`.
    const close = line.lastIndexOf('}')
    const series = close === -1 ? (line.split(/\s+/)[0] ?? '') : line.slice(0, close + 1)
    const valueText = line.slice(series.length).trim().split(/\s+/)[0] ?? ''
    if (series === '' || valueText === '') continue
    const value = parseValue(valueText)
    if (Number.isNaN(value) && valueText !== 'NaN') continue
    const name = seriesName(series)
    const family = belongsTo(current, name) ? (current as Family) : familyOf(e, name)
    family.samples.set(series, value)
  }
  return e
}

/** `name{a="1"}` + worker 2 → `name{a="1",worker="2"}`. */
function withWorkerLabel(series: string, worker: string): string {
  const label = `worker="${worker}"`
  if (!series.endsWith('}')) return `${series}{${label}}`
  return series.endsWith('{}') ? `${series.slice(0, -1)}${label}}` : `${series.slice(0, -1)},${label}}`
}

function addable(type: MetricType): boolean {
  return type === 'counter' || type === 'histogram' || type === 'untyped' || type === 'summary'
}

export interface MergePart {
  exposition: Exposition
  /** The worker's index, for its gauges; null for totals left by exited workers (which keep no gauges). */
  worker: string | null
}

/**
 * Add the parts up: counters and histograms summed, gauges kept per worker.
 * Families named in `omit` are left out (the primary reports them itself).
 */
export function mergeExpositions(parts: readonly MergePart[], omit: ReadonlySet<string> = new Set()): Exposition {
  const total: Exposition = new Map()
  for (const { exposition, worker } of parts) {
    for (const family of exposition.values()) {
      if (omit.has(family.name)) continue
      if (!addable(family.type) && worker === null) continue
      let into = total.get(family.name)
      if (into === undefined) {
        into = { name: family.name, help: family.help, type: family.type, samples: new Map() }
        total.set(family.name, into)
      }
      for (const [series, value] of family.samples) {
        if (addable(family.type)) into.samples.set(series, (into.samples.get(series) ?? 0) + value)
        else into.samples.set(withWorkerLabel(series, worker as string), value)
      }
    }
  }
  return total
}

/** Only what adds up (counters, histograms): what an exited worker leaves behind. */
export function addableOnly(e: Exposition): Exposition {
  const kept: Exposition = new Map()
  for (const [name, family] of e) if (addable(family.type)) kept.set(name, family)
  return kept
}

export function renderExposition(e: Exposition): string {
  const lines: string[] = []
  for (const f of e.values()) {
    if (f.help !== null) lines.push(`# HELP ${f.name} ${f.help}`)
    lines.push(`# TYPE ${f.name} ${f.type}`)
    for (const [series, value] of f.samples) lines.push(`${series} ${renderValue(value)}`)
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`
}
