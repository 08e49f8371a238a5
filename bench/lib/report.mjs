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

/** `a / b` as "0.93 × bare undici" (null-safe). */
export function ratioText(a, b, of) {
  if (a == null || b == null || b === 0) return { value: null, text: '—' }
  const value = a / b
  return { value, text: `${value.toFixed(2)} × ${of}` }
}
