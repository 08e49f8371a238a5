// The results table (Markdown, so it can go into the README as printed).

const num = (v, digits = 0) => (v == null || Number.isNaN(v) ? '—' : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }))

function metCell(row) {
  if (row.note) return row.note
  const noisy = row.noisy ? ` (noisy: other work took up to ${(100 * row.noisy).toFixed(0)}% CPU)` : ''
  if (row.met == null) return (row.problems?.length ? `invalid: ${row.problems.join('; ')}` : '—') + noisy
  const mark = row.met ? 'yes' : `NO${row.failed?.length ? ` (${row.failed.join(', ')})` : ''}`
  return (row.problems?.length ? `${mark} (invalid: ${row.problems.join('; ')})` : mark) + noisy
}

/**
 * scenario | target | measured | req/s | p50 ms | p99 ms | server CPU µs/req | ratio vs baseline | target met?
 * (server CPU: user + system time of the measured server process per request.)
 */
export function formatTable(rows) {
  const head = ['scenario', 'target', 'measured', 'req/s', 'p50 ms', 'p99 ms', 'server CPU µs/req', 'ratio vs baseline', 'target met?']
  const lines = [head, head.map(() => '---')]
  for (const r of rows) {
    lines.push([r.scenario, r.target ?? '', r.subject ?? '', num(r.rps), num(r.p50, 2), num(r.p99, 2), num(r.cpuUsPerReq), r.ratio ?? '', metCell(r)])
  }
  return lines.map((cells) => `| ${cells.join(' | ')} |`).join('\n')
}

/**
 * The middle value (the mean of the two middle ones for an even count). On
 * a shared 2-core machine a round now and then runs 30-40 % slow for every
 * process alike (the upstream answered 79k and 129k req/s in consecutive
 * rounds of one run); with a mean, one such round decides a target.
 */
export function median(xs) {
  if (xs.length === 0) return null
  const sorted = [...xs].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * How `a` compares with `b`, judged round by round: the median over rounds
 * of a's req/s divided by b's in the same round. The runner measures the
 * targets of a round back to back (scenarios list a subject next to its
 * baseline), so a slow spell of the machine, which can take 30 % off every
 * process for a few seconds, divides out of each round's ratio instead of
 * landing on whichever target it happened to hit. `a` and `b` are
 * aggregates from the runner (with `rounds`). The text gives the median and
 * the range of the rounds.
 */
export function pairedRatio(a, b, of) {
  const ra = a?.rounds ?? []
  const rb = b?.rounds ?? []
  const ratios = []
  for (let i = 0; i < Math.min(ra.length, rb.length); i++) {
    if (ra[i].rps != null && rb[i].rps > 0) ratios.push(ra[i].rps / rb[i].rps)
  }
  const value = median(ratios)
  if (value === null) return { value: null, ratios, text: '—' }
  const range = ratios.length > 1 ? ` (rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})` : ''
  // Three places below 2: a ratio of 0.898 against a 0.90 target printed as
  // "0.90 … NO" read as a contradiction.
  return { value, ratios, text: `${value.toFixed(value < 2 ? 3 : 2)} × ${of}${range}` }
}

/** The median over rounds of a's p99 minus b's p99 in the same round (ms), or null. */
export function pairedP99Added(a, b) {
  const ra = a?.rounds ?? []
  const rb = b?.rounds ?? []
  const diffs = []
  for (let i = 0; i < Math.min(ra.length, rb.length); i++) {
    const pa = ra[i].latency?.p99
    const pb = rb[i].latency?.p99
    if (pa != null && pb != null) diffs.push(pa - pb)
  }
  return median(diffs)
}
