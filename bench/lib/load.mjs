// Run one measurement: the load generator in its own process (autocannon-child.mjs).
import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { cpuSnapshot, foreignShare } from './cpu.mjs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const CHILD = fileURLToPath(new URL('./autocannon-child.mjs', import.meta.url))
let seq = 0

/**
 * Measure `spec` (see autocannon-child.mjs). Resolves the child's JSON plus
 * `problems`: non-2xx answers, socket errors, timeouts, or running out of
 * single-use values each make the figure invalid, and are said so.
 */
export async function runLoad(spec, logDir) {
  seq += 1
  const file = join(logDir, `load-${process.pid}-${seq}.json`)
  writeFileSync(file, JSON.stringify(spec))
  const before = cpuSnapshot()
  const stdout = await new Promise((resolve, reject) => {
    execFile(process.execPath, [CHILD, file], { maxBuffer: 16 * 1024 * 1024 }, (err, out, errOut) => {
      if (err) reject(new Error(`load generator failed: ${err.message}\n${errOut}`))
      else resolve(out)
    })
  })
  const foreignCpu = foreignShare(before, cpuSnapshot())
  const result = JSON.parse(stdout.trim().split('\n').pop())
  const problems = []
  if (result.non2xx > 0) problems.push(`${result.non2xx} non-2xx (${JSON.stringify(result.statuses)})`)
  if (result.errors > 0) problems.push(`${result.errors} socket errors`)
  if (result.timeouts > 0) problems.push(`${result.timeouts} timeouts`)
  if (spec.rotate?.once && result.rotation.wraps > 0) problems.push(`ran out of single-use values (${result.rotation.values})`)
  // Share of the CPU other work took meanwhile: it makes figures noisy.
  return { ...result, problems, foreignCpu }
}
