// bearward benchmark runner.
//
//   npm run bench                        every scenario
//   npm run bench -- jwt-warm opaque     some scenarios
//   npm run bench -- --quick             smoke run (~1 s per measurement, small memory run)
//   options: --duration S (3)  --warmup S (1)  --rounds N (10)  --connections N (50)
//            --log-level L (warn)  --cpu-prof (run bearward under node --cpu-prof; prints how to summarize)
//            --wait-quiet F (before each scenario, wait up to 10 min until other work takes < F of the CPU, e.g. 0.05)
//            --compare REF (build REF in a worktree; both builds in the same rounds, CPU/req side by side)
//            --pin (each measured server alone on the last CPU, with taskset; everything else on the others)
//            --only ID,ID (measure only these targets of each scenario, by id; rows of the others read —)
//
// Each server and the load generator run in their own processes; the targets
// of a scenario are measured in interleaved rounds (A B C, then C B A, ...)
// so machine drift hits them alike; a target's figure is its median round,
// and a ratio is the median, over forward/reverse pairs of rounds, of the
// pair's own ratio (report.mjs pairedRatio: a subject runs next to its
// baseline, and each pair holds both orders once). Rounds come in even
// numbers for that reason. Prints a table and writes
// bench/results/<YYYY-MM-DD>-<commit>-node<major>.json (merged with the
// scenarios of an earlier run of the same build on the same Node major that
// day): runs are labelled by date and the commit they measured, `+dirty` when
// the work tree had uncommitted changes, and by the runtime every Node server
// of the run ran on (the runner's own). Files written before 2026-11-30 have
// no `-node` part: they are all Node 20 runs, as their `node` field says.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, totalmem } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { BenchContext } from './lib/context.mjs'
import { cpuSnapshot, foreignShare } from './lib/cpu.mjs'
import { formatTable, median } from './lib/report.mjs'
import { pinServersTo } from './lib/spawn.mjs'
import { bothTargets, compareRows, prepareRef, removeRef, splitResults } from './lib/compare.mjs'

export const SCENARIOS = [
  'public-route',
  'h2-route',
  'jwt-warm',
  'jwt-cold',
  'upstream-token',
  'opaque',
  'dpop',
  'token-client-credentials',
  'token-code-refresh',
  'open-loop',
  'cpu',
  'floor',
  'instructions',
  'memory',
  'rate-limit',
  'rate-limit-keys',
]

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    duration: { type: 'string' },
    warmup: { type: 'string' },
    rounds: { type: 'string' },
    connections: { type: 'string', default: '50' },
    quick: { type: 'boolean', default: false },
    'log-level': { type: 'string', default: 'warn' },
    'cpu-prof': { type: 'boolean', default: false },
    'wait-quiet': { type: 'string' },
    compare: { type: 'string' },
    pin: { type: 'boolean', default: false },
    only: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
})
if (values.help) {
  process.stdout.write(
    readFileSync(fileURLToPath(import.meta.url), 'utf8')
      .split('\n')
      .slice(1, 10)
      .map((l) => l.replace(/^\/\/ ?/, ''))
      .join('\n') + `\nscenarios: ${SCENARIOS.join(', ')}\n`,
  )
  process.exit(0)
}
const unknown = positionals.filter((p) => !SCENARIOS.includes(p))
if (unknown.length > 0) {
  process.stderr.write(`unknown scenario ${unknown.join(', ')}; one of: ${SCENARIOS.join(', ')}\n`)
  process.exit(2)
}

const quick = values.quick
const opts = {
  quick,
  durationSec: Number(values.duration ?? (quick ? 1 : 3)),
  warmupSec: Number(values.warmup ?? (quick ? 0.5 : 1)),
  rounds: Number(values.rounds ?? (quick ? 1 : 10)),
  connections: Number(values.connections),
  logLevel: values['log-level'],
  cpuProf: values['cpu-prof'],
  waitQuiet: values['wait-quiet'] === undefined ? null : Number(values['wait-quiet']),
  pin: values.pin,
}
// The measured server on the last CPU, alone; the runner, the load generator, the upstream and Redis on the others.
if (opts.pin) pinServersTo(availableParallelism() - 1)
const selected = positionals.length > 0 ? positionals : SCENARIOS

const log = (msg) => process.stderr.write(`${msg}\n`)
/** Median over rounds of req/s, of each round's p50 / p99 and of CPU per request; every problem kept. */
function aggregate(results) {
  return {
    rps: median(results.map((r) => r.rps)),
    p50: median(results.map((r) => r.latency?.p50).filter((v) => v != null)),
    p99: median(results.map((r) => r.latency?.p99).filter((v) => v != null)),
    cpuUsPerReq: median(results.map((r) => r.serverCpuUsPerReq).filter((v) => v != null)),
    instructionsPerReq: median(results.map((r) => r.instructionsPerReq).filter((v) => v != null)),
    problems: [...new Set(results.flatMap((r) => r.problems ?? []))],
    foreignCpuMax: Math.max(0, ...results.map((r) => r.foreignCpu ?? 0)),
    rounds: results,
  }
}

/** --only: the targets named, by id (a scenario whose targets are all left out measures nothing). */
const only = values.only === undefined ? null : new Set(values.only.split(',').map((id) => id.trim()))
function onlySelected(plan) {
  if (only === null || plan.skip) return plan
  const targets = plan.targets.filter((t) => only.has(t.id))
  if (targets.length === 0) throw new Error(`--only ${values.only}: no target of this scenario (its ids: ${plan.targets.map((t) => t.id).join(', ')})`)
  return { ...plan, targets }
}

const ctx = new BenchContext(opts)
// --compare <ref>: every scenario is set up for this build and for <ref>'s, measured in the same rounds (lib/compare.mjs).
const ref = values.compare === undefined ? null : prepareRef(values.compare, ctx.workDir, log)
log(
  `bench: ${selected.join(', ')}; ${opts.connections} connections, warm-up ${opts.warmupSec}s, ${opts.durationSec}s x ${opts.rounds} rounds; work dir ${ctx.workDir}`,
)

const rows = []
const details = {}
let interrupted = false
process.on('SIGINT', () => {
  interrupted = true
  ctx.close().finally(() => process.exit(130))
})

for (const name of selected) {
  if (interrupted) break
  const scenario = (await import(`./scenarios/${name}.mjs`)).default
  if (opts.waitQuiet !== null) {
    const until = Date.now() + 600_000
    for (;;) {
      const a = cpuSnapshot()
      await sleep(5000)
      const share = foreignShare(a, cpuSnapshot())
      if (share === null || share < opts.waitQuiet || Date.now() > until) break
      log(`[${name}] waiting for a quiet machine: other work takes ${(100 * share).toFixed(0)}% of the CPU`)
    }
  }
  const started = Date.now()
  let plan = null
  let refPlan = null
  let mine = null
  try {
    plan = onlySelected(await scenario.setup(ctx))
    if (ref !== null && !plan.skip) {
      refPlan = onlySelected(await scenario.setup(ctx.forBuild(ref.root, `build-${ref.commit}`)))
      if (refPlan.skip) throw new Error(`${ref.ref} cannot run ${name}: ${refPlan.skip}`)
      mine = plan
      plan = { ...plan, targets: bothTargets(plan.targets, refPlan.targets, ref.commit) }
    }
    if (plan.skip) {
      log(`[${name}] skipped: ${plan.skip}`)
      rows.push({ scenario: scenario.title, subject: '—', target: scenario.target, note: `not run: ${plan.skip}` })
      details[name] = { title: scenario.title, skipped: plan.skip }
      continue
    }
    // A scenario's own round count (instructions: 5) unless --rounds names one.
    const rounds = values.rounds === undefined ? (plan.rounds ?? opts.rounds) : opts.rounds
    const results = Object.fromEntries(plan.targets.map((t) => [t.id, []]))
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? plan.targets : [...plan.targets].reverse()
      for (const target of order) {
        const r = await target.measure(round)
        results[target.id].push(r)
        const lat =
          (r.latency ? ` p50 ${r.latency.p50?.toFixed(2)} ms p99 ${r.latency.p99?.toFixed(2)} ms` : '') +
          (r.serverCpuUsPerReq != null ? `, server CPU ${r.serverCpuUsPerReq.toFixed(0)} µs/req` : '') +
          (r.instructionsPerReq != null ? `, ${(r.instructionsPerReq / 1000).toFixed(1)} k instructions/req` : '')
        log(
          `[${name}] round ${round + 1}/${rounds} ${target.label}: ${Math.round(r.rps)} req/s${lat}${r.problems?.length ? ` PROBLEMS: ${r.problems.join('; ')}` : ''} ${r.foreignCpu != null ? ` (other work: ${(100 * r.foreignCpu).toFixed(0)}% CPU)` : ''}`,
        )
      }
    }
    const agg = Object.fromEntries(Object.entries(results).map(([id, rs]) => [id, aggregate(rs)]))
    const profiles = {}
    for (const t of plan.targets) {
      if (!t.profileDir) continue
      const windows = results[t.id].filter((r) => r.window).map((r) => `--window ${r.window.startUs}:${r.window.endUs}`)
      profiles[t.id] = `node bench/profile.mjs ${t.profileDir}/*.cpuprofile ${windows.join(' ')}`
      log(`[${name}] CPU profile of "${t.label}" while measured (written when it stops):\n  ${profiles[t.id]}`)
    }
    let evaluated
    if (mine === null) evaluated = plan.evaluate(agg)
    else {
      const split = splitResults(agg)
      evaluated = [...mine.evaluate(split.mine), ...compareRows(split.mine, split.theirs, mine.targets, ref)]
    }
    const scenarioRows = evaluated.map((row) => ({ scenario: scenario.title, ...row }))
    rows.push(...scenarioRows)
    details[name] = {
      title: scenario.title,
      target: scenario.target,
      seconds: (Date.now() - started) / 1000,
      rows: scenarioRows,
      targets: agg,
      extra: plan.extra ?? null,
      ...(opts.cpuProf ? { profiles } : {}),
    }
  } catch (err) {
    log(`[${name}] FAILED: ${err.stack ?? err}`)
    rows.push({ scenario: scenario.title, subject: '—', target: scenario.target, note: `FAILED: ${String(err.message ?? err).split('\n')[0]}` })
    details[name] = { title: scenario.title, error: String(err.stack ?? err) }
  } finally {
    await plan?.teardown?.().catch((e) => log(`[${name}] teardown: ${e.message}`))
    await refPlan?.teardown?.().catch((e) => log(`[${name}] teardown of ${ref?.ref}: ${e.message}`))
    await ctx.endScenario()
  }
}
if (ref !== null) removeRef(ref)
await ctx.close()

const table = formatTable(rows)
process.stdout.write(`\n${table}\n`)
const foreign = Object.values(details)
  .flatMap((d) => Object.values(d.targets ?? {}).flatMap((t) => t.rounds.map((r) => r.foreignCpu)))
  .filter((v) => v != null)
if (foreign.length > 0) {
  const worst = Math.max(...foreign)
  process.stdout.write(
    `\nCPU taken by other work on this machine during the measurements: ${(100 * Math.min(...foreign)).toFixed(0)}–${(100 * worst).toFixed(0)}%` +
      `${worst > 0.05 ? ' (more than 5%: the figures are noisy; see --wait-quiet)' : ''}\n`,
  )
}

const date = new Date().toISOString().slice(0, 10)
const commit = measuredCommit()
const dir = fileURLToPath(new URL('./results/', import.meta.url))
mkdirSync(dir, { recursive: true })
// A smoke run (--quick) or a profiled one (slowed by the profiler) stays out of the dated results.
// One runtime per file: a Node 24 run of a build is never merged into that day's Node 20 run.
const runtime = `node${process.versions.node.split('.')[0]}`
const file = opts.cpuProf || opts.quick ? join(ctx.workDir, 'results.json') : join(dir, `${date}-${commit}-${runtime}.json`)
const previous = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : { scenarios: {} }
const args = process.argv.slice(2).join(' ')
const command = process.env.npm_lifecycle_event === 'bench' ? `npm run bench${args ? ' -- ' + args : ''}` : `node bench/run.mjs${args ? ' ' + args : ''}`
const entry = (name) => ({ ...details[name], command, at: new Date().toISOString(), params: opts })
const out = {
  date,
  commit,
  node: process.version,
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: cpus().length,
  memoryBytes: totalmem(),
  lastCommand: command,
  params: opts,
  // A run of some targets (--only) is kept beside a whole run of the same scenario, never over it.
  scenarios: { ...previous.scenarios, ...Object.fromEntries(Object.keys(details).map((n) => [only === null ? n : `${n} --only ${values.only}`, entry(n)])) },
}
/** The short commit of the build measured, `+dirty` when the work tree differs from it; `unknown` outside git. */
function measuredCommit() {
  const git = (...a) => spawnSync('git', a, { cwd: fileURLToPath(new URL('..', import.meta.url)), encoding: 'utf8' })
  const head = git('rev-parse', '--short=7', 'HEAD')
  if (head.status !== 0) return 'unknown'
  const dirty = git('status', '--porcelain', '--untracked-files=no').stdout.trim() !== ''
  return `${head.stdout.trim()}${dirty ? '+dirty' : ''}`
}
out.table = formatTable(SCENARIOS.flatMap((n) => out.scenarios[n]?.rows ?? []))
writeFileSync(file, JSON.stringify(out, null, 2) + '\n')
log(`wrote ${file}; configs, server logs${opts.cpuProf ? ', CPU profiles (cpuprof/)' : ''} in ${ctx.workDir}`)
// Every server the run started was stopped by ctx.close(); what can still
// be open here is a keep-alive socket of the runner's own fetches (the OTLP
// sink's stats), which once held a finished run open for ten minutes.
process.exit(0)
