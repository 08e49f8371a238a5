// `npm test`'s build: dist/ (what bin/bearward runs) and dist-test/ (what tap
// runs, see build-tests.mjs) at once. They are two tsc runs of 13 and 30 s of
// CPU that share nothing, each on one core; one after the other they were the
// larger part of the ten-minute budget's build step on two cores. Each run's
// output is printed when it ends, so their errors do not interleave.
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')

/** Run `node ...args`; resolve with its exit code and everything it printed. */
function run(name, args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    const output = []
    child.stdout.on('data', (d) => output.push(d))
    child.stderr.on('data', (d) => output.push(d))
    child.on('close', (code, signal) => resolve({ name, code: code ?? (signal ? 1 : 0), output: Buffer.concat(output).toString() }))
  })
}

const results = await Promise.all([run('build', [tsc, '-p', 'tsconfig.build.json']), run('build:tests', ['scripts/build-tests.mjs'])])
for (const { name, code, output } of results) {
  if (output !== '') process.stdout.write(`> ${name}\n${output}`)
  if (code !== 0) process.stderr.write(`${name} failed (exit ${code})\n`)
}
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0
