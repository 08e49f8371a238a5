// Run one open-loop (or closed-loop 'max') measurement in its own process
// (open-loop-child.mjs); the result has the same shape as load.mjs's, so the
// runner's rounds, medians and rows take it as they are.
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { cpuSnapshot, foreignShare } from './cpu.mjs'

const CHILD = fileURLToPath(new URL('./open-loop-child.mjs', import.meta.url))
let seq = 0

export async function runOpenLoop(spec, logDir) {
  seq += 1
  const file = join(logDir, `load-open-${process.pid}-${seq}.json`)
  writeFileSync(file, JSON.stringify(spec))
  const before = cpuSnapshot()
  const stdout = await new Promise((resolve, reject) => {
    execFile(process.execPath, [CHILD, file], { maxBuffer: 16 * 1024 * 1024 }, (err, out, errOut) => {
      if (err) reject(new Error(`open-loop generator failed: ${err.message}\n${errOut}`))
      else resolve(out)
    })
  })
  const foreignCpu = foreignShare(before, cpuSnapshot())
  const result = JSON.parse(stdout.trim().split('\n').pop())
  const problems = []
  if (result.non2xx > 0) problems.push(`${result.non2xx} non-2xx (${JSON.stringify(result.statuses)})`)
  if (result.errors > 0) problems.push(`${result.errors} socket errors`)
  if (spec.values?.once && result.rotation?.wraps > 0) problems.push(`ran out of single-use values (${result.rotation.values})`)
  // An open loop that could not keep its rate is overloaded: its latencies still count, but say so.
  if (spec.mode === 'rate' && result.rps < 0.95 * spec.rate) problems.push(`kept up with ${Math.round(result.rps)} of ${spec.rate} req/s`)
  return { ...result, problems, foreignCpu }
}
