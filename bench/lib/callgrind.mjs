// Instructions per request, counted by valgrind's callgrind (the `instructions`
// scenario). A CPU-time figure on a shared 2-vCPU VM moves by ±20 % between
// rounds; the number of instructions a process executes for the same requests
// moves by about 2 %, whatever else the machine is doing, because callgrind
// counts them rather than timing them. It counts user-space instructions only
// (a system call is one instruction; the kernel's work is not in the count),
// and the process runs 20-100 times slower under it, so this is a figure for
// comparing code (two routes, two builds), not a CPU time.
//
// A server runs under `valgrind --tool=callgrind --instr-atstart=no`: nothing
// is counted until the load generator (open-loop-child.mjs, `callgrind`)
// switches counting on around its measured phase, then off, and has the
// counts dumped.
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'

/** The command and arguments that run `command args` under callgrind, its dumps in `dir` named after `name`. */
export function underCallgrind(dir, name, command, args) {
  return {
    command: 'valgrind',
    args: ['--tool=callgrind', '--instr-atstart=no', `--callgrind-out-file=${join(dir, `${name}.%p.callgrind`)}`, command, ...args],
  }
}

/** Throws, saying how to install it, when valgrind is missing. */
export function assertValgrind() {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' })
  } catch {
    throw new Error('the instructions scenario needs valgrind: apt-get install -y valgrind')
  }
}

function control(pid, ...args) {
  execFileSync('callgrind_control', [...args, String(pid)], { stdio: 'ignore' })
}

/**
 * Count the instructions process `pid` (running under callgrind, in `dir`)
 * executes while `run()` runs: counters zeroed, counting on, `run()`, off,
 * dumped, the dump's total read and the dump removed. Resolves with the
 * count and what `run()` resolved with.
 */
export async function countInstructions(dir, pid, run) {
  control(pid, '--zero')
  control(pid, '--instr=on')
  let result
  try {
    result = await run()
  } finally {
    control(pid, '--instr=off')
  }
  const before = new Set(dumpsOf(dir, pid))
  control(pid, '--dump')
  // callgrind_control returns once the dump is requested; the file is complete when its totals line is in.
  const deadline = Date.now() + 60_000
  for (;;) {
    const fresh = dumpsOf(dir, pid).filter((f) => !before.has(f))
    if (fresh.length > 1) throw new Error(`callgrind wrote ${fresh.length} dumps for pid ${pid} (expected 1)`)
    if (fresh.length === 1) {
      const file = join(dir, fresh[0])
      const totals = /^totals:\s+(\d+)/m.exec(readFileSync(file, 'utf8'))
      if (totals !== null) {
        rmSync(file)
        return { instructions: Number(totals[1]), result }
      }
    }
    if (Date.now() > deadline) throw new Error(`no callgrind dump with totals for pid ${pid} in ${dir}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

function dumpsOf(dir, pid) {
  return readdirSync(dir).filter((f) => f.includes(`.${pid}.callgrind.`))
}
