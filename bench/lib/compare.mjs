// `npm run bench -- --compare <ref>`: the same scenarios on two builds, this
// work tree and <ref>, measured in the same interleaved rounds. <ref> is
// checked out into a git worktree of its own under the work directory and
// built there (`npm run build`, with this checkout's node_modules when the
// lockfiles agree, else its own `npm ci`); its bin/bearward then runs beside
// this one's. Each scenario is set up once per build, every target of both
// takes its turn in every round, and the report prints, target by target,
// the CPU per request of each build and their ratio within pairs of rounds.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from './bearward.mjs'
import { instructionRatio, pairedCpuRatio, pairedRatio } from './report.mjs'

const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })

/** Check out and build `ref` in `<workDir>/compare-<sha>`; its root, commit and why it could not be built. */
export function prepareRef(ref, workDir, log) {
  const sha = run('git', ['rev-parse', '--verify', `${ref}^{commit}`], ROOT).trim()
  const dir = join(workDir, `compare-${sha.slice(0, 7)}`)
  if (!existsSync(dir)) run('git', ['worktree', 'add', '--detach', dir, sha], ROOT)
  const sameLock = readFileSync(join(ROOT, 'package-lock.json'), 'utf8') === readFileSync(join(dir, 'package-lock.json'), 'utf8')
  if (!existsSync(join(dir, 'node_modules'))) {
    if (sameLock) symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir')
    else {
      log(`[compare] ${ref}'s package-lock.json differs: npm ci in ${dir}`)
      run('npm', ['ci', '--no-audit', '--no-fund'], dir)
    }
  }
  log(`[compare] building ${ref} (${sha.slice(0, 7)}) in ${dir}`)
  run('npm', ['run', 'build'], dir)
  return { root: dir, commit: sha.slice(0, 7), ref }
}

/** Remove the worktree prepareRef made (its directory and git's record of it). */
export function removeRef(prepared) {
  try {
    run('git', ['worktree', 'remove', '--force', prepared.root], ROOT)
  } catch {
    // Left for `git worktree prune`: the work directory is temporary.
  }
}

/** Both builds' targets for one round order: this build's first, ids and labels marked. */
export function bothTargets(mine, theirs, refName) {
  return [
    ...mine.map((t) => ({ ...t, id: `this:${t.id}`, label: `[this] ${t.label}` })),
    ...theirs.map((t) => ({ ...t, id: `ref:${t.id}`, label: `[${refName}] ${t.label}` })),
  ]
}

/** Split aggregated results of bothTargets back into this build's and the ref's, by original id. */
export function splitResults(agg) {
  const mine = {}
  const theirs = {}
  for (const [id, v] of Object.entries(agg)) {
    if (id.startsWith('this:')) mine[id.slice(5)] = v
    else if (id.startsWith('ref:')) theirs[id.slice(4)] = v
  }
  return { mine, theirs }
}

/** One row per target both builds measured: CPU per request side by side, and this build ÷ the ref within pairs of rounds. */
export function compareRows(mine, theirs, targets, prepared) {
  const us = (a) => (a?.cpuUsPerReq == null ? '—' : `${a.cpuUsPerReq.toFixed(1)} µs`)
  return targets
    .filter((t) => mine[t.id] && theirs[t.id])
    .map((t) => {
      const subject = `${t.label}: this build against ${prepared.ref} (${prepared.commit})`
      if (mine[t.id].instructionsPerReq != null) {
        // Counted under callgrind (the instructions scenario): its times are valgrind's, not the server's.
        const kilo = (a) => `${(a.instructionsPerReq / 1000).toFixed(1)} k`
        const ratio = `${kilo(mine[t.id])} here, ${kilo(theirs[t.id])} at ${prepared.commit}; ${instructionRatio(mine[t.id], theirs[t.id], prepared.commit).text}`
        return { subject, target: 'side by side', ratio }
      }
      const cpu = pairedCpuRatio(mine[t.id], theirs[t.id], prepared.commit)
      const rate = pairedRatio(mine[t.id], theirs[t.id], prepared.commit)
      return {
        subject,
        target: 'side by side',
        rps: mine[t.id].rps,
        cpuUsPerReq: mine[t.id].cpuUsPerReq,
        ratio: `${us(mine[t.id])} here, ${us(theirs[t.id])} at ${prepared.commit}; ${cpu.text}; ${rate.text}`,
      }
    })
}
