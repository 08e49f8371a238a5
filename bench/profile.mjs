// Summarize a V8 .cpuprofile (from `node --cpu-prof`): self time by function
// and by area (our dist/ folders, each node_modules package, node internals,
// GC, idle). `node bench/profile.mjs FILE.cpuprofile [--top 25]`
//
// `npm run bench -- jwt-warm --cpu-prof` leaves the profile of the bearward
// process (log level warn) in <work dir>/cpuprof/.
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' } } })
if (positionals.length !== 1) {
  process.stderr.write('usage: node bench/profile.mjs FILE.cpuprofile [--top N]\n')
  process.exit(2)
}
const profile = JSON.parse(readFileSync(positionals[0], 'utf8'))
const byId = new Map(profile.nodes.map((n) => [n.id, n]))

// Self time per node: each sample's time delta goes to the node it hit.
const selfUs = new Map()
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i]
  selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
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
process.stdout.write(`profile ${positionals[0]}: ${(totalUs / 1e6).toFixed(1)} s sampled, ${(busyUs / 1e6).toFixed(1)} s busy (percentages are of busy time)\n\nself time by area\n`)
const busy = (entries) => [...entries].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, top)
for (const [k, us] of busy(areas)) process.stdout.write(`${pct(us)} ${ms(us)}  ${k}\n`)
process.stdout.write(`\nself time by function (top ${top})\n`)
for (const [k, us] of busy(fns)) process.stdout.write(`${pct(us)} ${ms(us)}  ${k}\n`)
