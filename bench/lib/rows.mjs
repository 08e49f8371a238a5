// Turning aggregated measurements into table rows.
import { pairedP99Added, pairedRatio } from './report.mjs'

/**
 * One row for a measured target. `checks` are the scenario's targets for it,
 * each `{ ok: boolean, what: string }`; `met` is null when there is none.
 * A measurement with problems (non-2xx, errors, exhausted tokens) never meets
 * a target.
 */
export function row(agg, { subject, target = '', ratio = '', checks = null, extra }) {
  const problems = agg?.problems ?? []
  let met = null
  let failed = []
  if (checks) {
    failed = checks.filter((c) => !c.ok).map((c) => c.what)
    met = failed.length === 0 && problems.length === 0
  }
  const noisy = agg?.foreignCpuMax > 0.05 ? agg.foreignCpuMax : null
  return {
    subject,
    target,
    rps: agg?.rps ?? null,
    p50: agg?.p50 ?? null,
    p99: agg?.p99 ?? null,
    cpuUsPerReq: agg?.cpuUsPerReq ?? null,
    ratio,
    met,
    failed,
    problems,
    noisy,
    ...(extra ? { extra } : {}),
  }
}

export { pairedP99Added, pairedRatio }

/** A row for a target that could not be measured. */
export function notRun(subject, target, reason) {
  return { subject, target, rps: null, p50: null, p99: null, ratio: '', met: null, note: `not run: ${reason}` }
}
