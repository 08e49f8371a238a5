// Start the real product (`bin/bearward start -c FILE`) from a config the
// scenario describes. The config is written as JSON, which is YAML 1.2.
import { execFileSync } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort, httpProbe, startProcess } from './spawn.mjs'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const BIN = join(ROOT, 'bin/bearward')
/** The build a scenario starts: this checkout's, or during `--compare` the ref's worktree (ctx.buildRoot). */
const buildRoot = (ctx) => ctx.buildRoot ?? ROOT

/** Why bearward cannot run yet (build missing or broken), or null when it can. */
export function bearwardUnavailable() {
  if (!existsSync(join(ROOT, 'dist/cli.js'))) return 'dist/cli.js missing (build failed?)'
  try {
    execFileSync(process.execPath, [BIN, '--version'], { stdio: 'pipe', timeout: 10_000 })
    return null
  } catch (err) {
    const lines = String(err.stderr ?? err.message)
      .trim()
      .split('\n')
    const why = lines.find((l) => /Error|error:/.test(l)) ?? lines[0]
    return `\`bearward --version\` failed: ${why.trim()}`
  }
}

/** `hashSecret` from the built product, so secret_hash is in its own format. */
export async function hashSecret(secret) {
  const mod = await import(join(ROOT, 'dist/crypto/secret.js'))
  return mod.hashSecret(secret)
}

/**
 * `BENCH_AB_NODE_FLAGS="--max-semi-space-size=16"`: the `open-loop` and
 * `memory` scenarios also run a second bearward with these node flags (after
 * the launchers' own), measured in the same rounds as the first, so a runtime
 * setting is judged against the shipped one in one run. null when unset.
 */
export function abNodeFlags() {
  const flags = nodeFlagsIn('BENCH_AB_NODE_FLAGS')
  return flags.length > 0 ? flags : null
}

/** The node flags an environment variable lists, space-separated (none when unset). */
function nodeFlagsIn(name) {
  return (process.env[name] ?? '').split(' ').filter(Boolean)
}

/** A listen port and the public_url (issuer, default audience) that goes with it. */
export async function reserveAddress() {
  const port = await freePort()
  return { port, publicUrl: `http://127.0.0.1:${port}` }
}

/**
 * Write `config` (snake_case, as in README "Configuration") with listen,
 * admin_listen and log filled in, start bearward, and wait until the admin
 * /readyz answers 200. With `--cpu-prof` it runs under `node --cpu-prof`,
 * its profile going to `<work dir>/cpuprof/<name>/` (`profileDir`). `env` is
 * added to the process environment (e.g. OTEL_* variables). `callgrind`: run
 * it under valgrind's callgrind (spawn.mjs, callgrind.mjs). `nodeFlags`: node
 * flags for this instance, after the launchers' own (a later V8 flag wins):
 * an A/B of runtime settings (`BENCH_AB_NODE_FLAGS`, bench/README.md).
 */
export async function startBearward(ctx, { name = 'bearward', port, config, logLevel, env = {}, callgrind = false, nodeFlags = [] }) {
  const cpuProfDir = ctx.opts.cpuProf ? join(ctx.workDir, 'cpuprof', name) : undefined
  const adminPort = await freePort()
  const full = {
    listen: `127.0.0.1:${port}`,
    admin_listen: `127.0.0.1:${adminPort}`,
    log: { level: logLevel ?? ctx.opts.logLevel },
    ...config,
  }
  const file = join(ctx.workDir, `${name}.yaml`)
  writeFileSync(file, JSON.stringify(full, null, 2) + '\n')
  // BENCH_BEARWARD_NODE_FLAGS: extra node flags for diagnosis (`--trace-gc`: pauses in its .out.log).
  const extraFlags = nodeFlagsIn('BENCH_BEARWARD_NODE_FLAGS')
  const nodeArgs = [...extraFlags, ...nodeFlags, ...(cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : [])]
  const handle = await startProcess({
    name,
    args: [...nodeArgs, join(buildRoot(ctx), 'bin/bearward'), 'start', '-c', file],
    logDir: ctx.workDir,
    cwd: buildRoot(ctx),
    env,
    measured: true,
    callgrind,
    probe: async () => ((await httpProbe(`http://127.0.0.1:${adminPort}/readyz`)) ? `http://127.0.0.1:${port}` : null),
  })
  return { ...handle, configFile: file, adminUrl: `http://127.0.0.1:${adminPort}`, profileDir: cpuProfDir ?? null }
}
