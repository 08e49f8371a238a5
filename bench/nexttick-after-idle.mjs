// Shows why bearward's launchers pass --no-memory-reducer (docs/performance.md):
// an idle Node 20 process measures process.nextTick every 2 s for 24 s, once
// with V8's defaults and once with the flag.
// `node bench/nexttick-after-idle.mjs` (about 50 s; prints ns per nextTick).
// The first samples are slow in both: the loop is not optimized yet.
import { execFileSync } from 'node:child_process'

const PROBE = `
const noop = () => {}
const out = []
let n = 0
function probe() {
  const N = 20000
  const start = process.hrtime.bigint()
  for (let i = 0; i < N; i++) process.nextTick(noop)
  out.push(Math.round(Number(process.hrtime.bigint() - start) / N))
  if (++n < 12) setTimeout(probe, 2000)
  else process.stdout.write(JSON.stringify(out))
}
setTimeout(probe, 2000)
`

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
for (const flags of [[], ['--no-memory-reducer']]) {
  const samples = JSON.parse(execFileSync(process.execPath, [...flags, '-e', PROBE], { encoding: 'utf8' }))
  const label = flags.length ? 'node --no-memory-reducer' : 'node (V8 defaults)      '
  process.stdout.write(
    `${label}  ns/nextTick at 2 s steps: ${samples.join(' ')}  | median at 6-10 s ${median(samples.slice(2, 5))}, at 14-24 s ${median(samples.slice(6))}\n`,
  )
}
