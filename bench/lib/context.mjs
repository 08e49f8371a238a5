// What a scenario gets from the runner: options, a work directory for configs,
// logs and token files, the shared upstream, and helpers that start servers
// (each its own process, stopped after the scenario) and build measurable
// targets (each measurement is a fresh load-generator process).
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runLoad } from './load.mjs'
import { childPids, startProcess } from './spawn.mjs'

const BENCH = fileURLToPath(new URL('../', import.meta.url))

export class BenchContext {
  #upstream = null
  #scenarioHandles = []
  /** The run's context when this one sets up another build (`--compare`): it owns the upstream and the processes. */
  #parent = null

  /**
   * @param buildRoot the checkout whose bin/bearward scenarios start (undefined: this one, lib/bearward.mjs)
   */
  constructor(opts, parent = null, subdir = null, buildRoot = undefined) {
    this.opts = opts
    this.#parent = parent
    this.buildRoot = buildRoot
    if (parent === null) this.workDir = mkdtempSync(join(tmpdir(), 'bearward-bench-'))
    else {
      this.workDir = join(parent.workDir, subdir)
      mkdirSync(this.workDir, { recursive: true })
    }
  }

  /**
   * A context for setting up the same scenario on another build (`--compare`):
   * its configs, logs and value files in a subdirectory of its own, so the two
   * builds' files never overwrite each other; the upstream and the process
   * list are this context's.
   */
  forBuild(root, subdir) {
    return new BenchContext(this.opts, this, subdir, root)
  }

  /** The shared upstream (started once for the whole run). */
  async upstream() {
    if (this.#parent !== null) return this.#parent.upstream()
    this.#upstream ??= await startProcess({ name: 'upstream', args: [join(BENCH, 'lib/upstream.mjs')], logDir: this.workDir })
    return this.#upstream
  }

  /** Track a server started by a scenario so it is stopped when the scenario ends. */
  track(handle) {
    if (this.#parent !== null) return this.#parent.track(handle)
    this.#scenarioHandles.push(handle)
    return handle
  }

  /** Start `bench/baselines/<file>` with `args` as its own process (under callgrind with `{ callgrind: true }`, spawn.mjs). */
  async baseline(file, args, name = file.replace(/\.mjs$/, ''), { callgrind = false } = {}) {
    return this.track(
      await startProcess({ name, args: [join(BENCH, 'baselines', file), ...args.map(String)], logDir: this.workDir, measured: true, callgrind }),
    )
  }

  /**
   * Stop what the current scenario started (the upstream stays), newest
   * first: bearward goes before the Redis it uses.
   */
  async endScenario() {
    const handles = this.#scenarioHandles.splice(0).reverse()
    for (const h of handles) {
      const r = await h.stop({ graceMs: 30_000 })
      if (r.killed) process.stderr.write(`${h.name} did not exit within 30 s of SIGTERM: killed (see ${h.errFile})\n`)
      else if (r.ms > 2000) process.stderr.write(`${h.name} took ${(r.ms / 1000).toFixed(1)} s to exit after SIGTERM\n`)
      else if (r.code !== 0 && r.signal !== 'SIGTERM') process.stderr.write(`${h.name} exited with ${JSON.stringify(r)} (see ${h.errFile})\n`)
    }
  }

  /** Stop everything; delete the bulky token files, keep configs, logs and profiles. */
  async close() {
    await this.endScenario()
    await this.#upstream?.stop()
    for (const name of readdirSync(this.workDir)) {
      if (/\.(tokens|values)$|^load-.*\.json$/.test(name)) rmSync(join(this.workDir, name), { force: true })
    }
  }

  /**
   * A target measured over HTTP by the load generator; `server` is the process
   * handle whose CPU time per request is reported. `rotate` is a rotation
   * spec (see autocannon-child.mjs) or a function of the round giving one
   * (single-use values need a fresh slice per round). `withChildren` adds the
   * server's child processes (a primary's workers) to its CPU time.
   */
  loadTarget({ id, label, url, server, withChildren = false, method = 'GET', headers = {}, body, rotate, amount, warmupSec, durationSec }) {
    const opts = this.opts
    return {
      id,
      label,
      profileDir: server?.profileDir ?? null,
      measure: (round) =>
        runLoad(
          {
            url,
            method,
            headers,
            body,
            connections: opts.connections,
            warmupSec: warmupSec ?? opts.warmupSec,
            durationSec: durationSec ?? opts.durationSec,
            amount,
            serverPids: server ? [server.pid, ...(withChildren ? childPids(server.pid) : [])] : [],
            rotate: typeof rotate === 'function' ? rotate(round) : rotate,
          },
          this.workDir,
        ),
    }
  }

  /** A file in the work directory. */
  file(name) {
    return join(this.workDir, name)
  }
}
