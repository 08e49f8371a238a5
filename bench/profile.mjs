// Summarize a V8 .cpuprofile (from `node --cpu-prof`): self time by function
// and by area (our dist/ folders, each node_modules package, node internals,
// GC, idle). `node bench/profile.mjs FILE.cpuprofile [--top 25]`
//
// `npm run bench -- jwt-warm --cpu-prof` leaves the profile of the bearward
// process (log level warn) in <work dir>/cpuprof/ and prints the measured
// phases as `--window START:END` (CLOCK_MONOTONIC µs, the profile's clock),
// so start-up and warm-up stay out of the summary. Repeat --window to add phases.
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '25' }, window: { type: 'string', multiple: true, default: [] }, callers: { type: 'string' } },
})
if (positionals.length !== 1) {
  process.stderr.write('usage: node bench/profile.mjs FILE.cpuprofile [--top N]\n')
  process.exit(2)
}
const profile = JSON.parse(readFileSync(positionals[0], 'utf8'))
const byId = new Map(profile.nodes.map((n) => [n.id, n]))

const windows = values.window.map((w) => w.split(':').map(Number))
const inWindow = (t) => windows.length === 0 || windows.some(([a, b]) => t >= a && t <= b)

// Self time per node: each sample's time delta goes to the node it hit.
const selfUs = new Map()
let t = profile.startTime
for (let i = 0; i < profile.samples.length; i++) {
  const delta = profile.timeDeltas[i] ?? 0
  t += delta
  if (!inWindow(t)) continue
  const id = profile.samples[i]
  selfUs.set(id, (selfUs.get(id) ?? 0) + delta)
}
const totalUs = [...selfUs.values()].reduce((a, b) => a + b, 0)
// Percentages are of busy time: idle is time the process waited for work.
let idleUs = 0
for (const [id, us] of selfUs) if (byId.get(id).callFrame.functionName === '(idle)') idleUs += us
const busyUs = totalUs - idleUs

function area(url, name) {
  if (!url) return name.startsWith('(') ? name : '(native / V8 builtins)'
  if (url.startsWith('node:')) {
    const parts = url.slice(5).split('/')
    return 'node:' + (parts[0] === 'internal' && parts.length > 2 ? `internal/${parts[1]}` : parts[0])
  }
  const nm = url.lastIndexOf('node_modules/')
  if (nm !== -1) {
    const rest = url.slice(nm + 13).split('/')
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]
  }
  const dist = url.indexOf('/dist/')
  if (dist !== -1) {
    const rest = url.slice(dist + 6).split('/')
    return 'bearward ' + (rest.length > 1 ? rest[0] + '/' : rest[0])
  }
  return url
}

const fns = new Map()
const areas = new Map()
for (const [id, us] of selfUs) {
  const { functionName, url, lineNumber } = byId.get(id).callFrame
  const name = functionName || '(anonymous)'
  const short = url ? url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/') : ''
  const key = `${name}  ${short}${url ? ':' + (lineNumber + 1) : ''}`
  fns.set(key, (fns.get(key) ?? 0) + us)
  const a = area(url, name)
  areas.set(a, (areas.get(a) ?? 0) + us)
}

const pct = (us) => ((100 * us) / busyUs).toFixed(1).padStart(5) + '%'
const ms = (us) => (us / 1000).toFixed(0).padStart(7) + ' ms'
const top = Number(values.top)
if (totalUs === 0) {
  process.stderr.write(`no samples${windows.length ? ' in the given windows' : ''}\n`)
  process.exit(1)
}
process.stdout.write(
  `profile ${positionals[0]}${windows.length ? ` (${windows.length} window(s))` : ''}: ${(totalUs / 1e6).toFixed(1)} s sampled, ${(busyUs / 1e6).toFixed(1)} s busy (percentages are of busy time)\n\nself time by area\n`,
)
const busy = (entries) =>
  [...entries]
    .filter(([k]) => !k.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
for (const [k, us] of busy(areas)) process.stdout.write(`${pct(us)} ${ms(us)}  ${k}\n`)
process.stdout.write(`\nself time by function (top ${top})\n`)
for (const [k, us] of busy(fns)) process.stdout.write(`${pct(us)} ${ms(us)}  ${k}\n`)

if (values.callers) {
  const parent = new Map()
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const label = (id) => {
    const { functionName, url, lineNumber } = byId.get(id).callFrame
    return `${functionName || '(anonymous)'} ${url ? url.replace(/^file:\/\/.*?\/(node_modules|dist)\//, '$1/') + ':' + (lineNumber + 1) : ''}`
  }
  const stacks = new Map()
  for (const [id, us] of selfUs) {
    if (!label(id).includes(values.callers)) continue
    const chain = []
    for (let p = id; p !== undefined && chain.length < 10; p = parent.get(p)) chain.push(label(p))
    const key = chain.join('\n      <- ')
    stacks.set(key, (stacks.get(key) ?? 0) + us)
  }
  process.stdout.write(`\ncall stacks into "${values.callers}"\n`)
  for (const [k, us] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 5)) process.stdout.write(`${pct(us)} ${ms(us)}  ${k}\n`)
}
