// How much of the machine's CPU went to work other than this benchmark while
// a measurement ran (Linux /proc). The benchmark's own processes are the
// runner and everything it started (servers, Redis, the load generator, which
// is reaped into the runner's cutime when it exits).
import { readFileSync, readdirSync } from 'node:fs'

function machine() {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  const total = cpu.reduce((a, b) => a + b, 0)
  const idle = (cpu[3] ?? 0) + (cpu[4] ?? 0) // idle + iowait
  return { total, busy: total - idle }
}

function processes() {
  const out = new Map()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const ppid = Number(rest[1])
      const ticks = Number(rest[11]) + Number(rest[12]) + Number(rest[13]) + Number(rest[14])
      out.set(Number(name), { ppid, ticks })
    } catch {
      // exited while we looked
    }
  }
  return out
}

function ours(procs) {
  let ticks = 0
  const mine = new Set([process.pid])
  let grew = true
  while (grew) {
    grew = false
    for (const [pid, p] of procs) {
      if (!mine.has(pid) && mine.has(p.ppid)) {
        mine.add(pid)
        grew = true
      }
    }
  }
  for (const pid of mine) ticks += procs.get(pid)?.ticks ?? 0
  return ticks
}

/** A snapshot to pass to `foreignShare` later. */
export function cpuSnapshot() {
  try {
    return { ...machine(), ours: ours(processes()) }
  } catch {
    return null
  }
}

/** Fraction (0–1) of the machine's CPU capacity used by other work between two snapshots. */
export function foreignShare(a, b) {
  if (!a || !b || b.total <= a.total) return null
  const foreign = b.busy - a.busy - (b.ours - a.ours)
  return Math.max(0, foreign / (b.total - a.total))
}
