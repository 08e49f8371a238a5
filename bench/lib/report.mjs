// The results table (Markdown, so it can go into the README as printed).

const num = (v, digits = 0) =>
  v == null || Number.isNaN(v) ? '—' : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

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
 * Combine per-round values over each forward/reverse pair of rounds.
 *
 * The runner measures a round's targets in list order, the next round in
 * reverse (A B, then B A), and a target measured second in a pair runs a few
 * per cent slower than the same target measured first: in one session-6 run
 * bearward's public-route ratio was 0.867 in the rounds where it followed
 * the bare proxy and 0.951 in those where it went first, and the noise
 * floor (two processes of one program) showed the same tilt. A median over
 * single rounds of an odd count gives the forward order the majority, so it
 * took that tilt as a result. Each pair of consecutive rounds holds both
 * orders once; `combine` (a geometric mean for ratios, a mean for
 * differences) cancels the position effect inside the pair, and the median
 * is taken over pairs. A lone last round of an odd count is left out; a
 * single round (a --quick run) is used as it is.
 */
function overPairs(values, combine) {
  if (values.length === 1) return values[0] == null ? [] : [values[0]]
  const pairs = []
  for (let i = 0; i + 1 < values.length; i += 2) {
    const x = values[i]
    const y = values[i + 1]
    if (x != null && y != null) pairs.push(combine(x, y))
  }
  return pairs
}

/**
 * How `a` compares with `b`, judged within rounds: each round's ratio of
 * a's req/s to b's, combined over forward/reverse pairs of rounds (see
 * overPairs), and the median over pairs. The runner measures the targets of
 * a round back to back (scenarios list a subject next to its baseline), so a
 * slow spell of the machine, which can take 30 % off every process for a few
 * seconds, divides out of each ratio instead of landing on whichever target
 * it happened to hit. `a` and `b` are aggregates from the runner (with
 * `rounds`). The text gives the median and the range of the pairs.
 */
export function pairedRatio(a, b, of) {
  const ra = a?.rounds ?? []
  const rb = b?.rounds ?? []
  const perRound = []
  for (let i = 0; i < Math.min(ra.length, rb.length); i++) {
    perRound.push(ra[i].rps != null && rb[i].rps > 0 ? ra[i].rps / rb[i].rps : null)
  }
  const ratios = overPairs(perRound, (x, y) => Math.sqrt(x * y))
  const value = median(ratios)
  if (value === null) return { value: null, ratios, text: '—' }
  const range = ratios.length > 1 ? ` (pairs of rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})` : ''
  // Three places below 2: a ratio of 0.898 against a 0.90 target printed as
  // "0.90 … NO" read as a contradiction.
  return { value, ratios, text: `${value.toFixed(value < 2 ? 3 : 2)} × ${of}${range}` }
}

/** a's p99 minus b's p99 in the same round (ms), averaged over forward/reverse pairs of rounds; the median over pairs, or null. */
export function pairedP99Added(a, b) {
  const ra = a?.rounds ?? []
  const rb = b?.rounds ?? []
  const perRound = []
  for (let i = 0; i < Math.min(ra.length, rb.length); i++) {
    const pa = ra[i].latency?.p99
    const pb = rb[i].latency?.p99
    perRound.push(pa != null && pb != null ? pa - pb : null)
  }
  return median(overPairs(perRound, (x, y) => (x + y) / 2))
}

/**
 * a's latency percentile `key` (p50, p99, p999) minus b's in the same round
 * (ms), averaged over forward/reverse pairs of rounds; the median over pairs,
 * or null. pairedP99Added is this for p99.
 */
export function pairedLatencyAdded(a, b, key) {
  const ra = a?.rounds ?? []
  const rb = b?.rounds ?? []
  const perRound = []
  for (let i = 0; i < Math.min(ra.length, rb.length); i++) {
    const pa = ra[i].latency?.[key]
    const pb = rb[i].latency?.[key]
    perRound.push(pa != null && pb != null ? pa - pb : null)
  }
  return median(overPairs(perRound, (x, y) => (x + y) / 2))
}

/**
 * Instructions per request of `a` ÷ `b` (callgrind.mjs), round by round (each
 * round's two counts were taken minutes apart, but a count does not depend on
 * what else ran), the median over rounds and their range.
 */
export function instructionRatio(a, b, of) {
  const ra = a?.rounds ?? []
  const rb = b?.rounds ?? []
  const ratios = []
  for (let i = 0; i < Math.min(ra.length, rb.length); i++) {
    const x = ra[i].instructionsPerReq
    const y = rb[i].instructionsPerReq
    if (x != null && y > 0) ratios.push(x / y)
  }
  const value = median(ratios)
  if (value === null) return { value: null, ratios, text: '—' }
  const range = ratios.length > 1 ? ` (rounds ${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)})` : ''
  // Work a round can pick up besides its requests (a recompilation, a full GC) only ever adds to its
  // count, so the smallest round of each side is the steady state: their ratio is printed too.
  const least = (r) => Math.min(...r.map((x) => x.instructionsPerReq).filter((n) => n != null))
  const steady = ratios.length > 1 ? least(ra) / least(rb) : null
  const steadyText = steady === null ? '' : `; smallest rounds ${steady.toFixed(3)} ×`
  return { value, ratios, steady, text: `instructions/req ${value.toFixed(3)} × ${of}${range}${steadyText}` }
}

/**
 * How a's server CPU time per request compares with b's, judged within
 * rounds like pairedRatio (each round's ratio, geometric mean over each
 * forward/reverse pair, median over pairs).
 */
export function pairedCpuRatio(a, b, of) {
  const ra = a?.rounds ?? []
  const rb = b?.rounds ?? []
  const perRound = []
  for (let i = 0; i < Math.min(ra.length, rb.length); i++) {
    const ca = ra[i].serverCpuUsPerReq
    const cb = rb[i].serverCpuUsPerReq
    perRound.push(ca != null && cb > 0 ? ca / cb : null)
  }
  const ratios = overPairs(perRound, (x, y) => Math.sqrt(x * y))
  const value = median(ratios)
  if (value === null) return { value: null, ratios, text: '—' }
  const range = ratios.length > 1 ? ` (pairs of rounds ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})` : ''
  return { value, ratios, text: `CPU/req ${value.toFixed(2)} × ${of}${range}` }
}
