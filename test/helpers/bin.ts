import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, writeFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { createInterface } from 'node:readline'
import { configYaml, type ConfigTree } from './config-tree.js'

export const BIN = resolve('bin/bearward')

/**
 * The environment for a child bearward: ours minus NODE_OPTIONS, meant for
 * test files, not for the built binary. Under tap, @tapjs/processinfo puts
 * the test process's NODE_OPTIONS and its own --import back into every child
 * process (that is how the binary's coverage is collected): see binCommand.
 * NODE_V8_COVERAGE stays, so the binary's coverage still counts.
 */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra }
  delete env.NODE_OPTIONS
  return env
}

/**
 * `command args` for spawning the binary. Without coverage (`npm test`), run
 * through `env -u NODE_OPTIONS`: processinfo adds its NODE_OPTIONS to every
 * child (see childEnv), `env` removes them and execs the command, so the
 * binary runs as users run it, with no module hook. The hook's loader thread
 * cost 0.9 CPU-s of a `start` that takes 1.3 without it (Node 20), in every
 * bin/bearward, CLI run and worker of the suite. `env` execs in place, so the
 * child's pid and signals are the command's. With coverage the hook stays: it
 * is what collects the binary's coverage.
 */
export function binCommand(command: string, args: readonly string[]): [string, string[]] {
  if (process.env.TAP_DISABLE_COVERAGE !== '1') return [command, [...args]]
  return ['/usr/bin/env', ['-u', 'NODE_OPTIONS', command, ...args]]
}

export interface RunningBin {
  /** Base URL of `listen`. */
  url: string
  /** Base URL of `admin_listen`. */
  admin: string
  child: ChildProcess
  /** Every log line printed so far (raw JSON text). */
  lines: string[]
  /** Resolve with the first log line (parsed) for which `pred` holds, waiting up to `ms`. */
  waitForLog(pred: (entry: Record<string, unknown>) => boolean, ms?: number): Promise<Record<string, unknown>>
  /** Send a signal and resolve with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>
  exited: Promise<number | null>
}

/**
 * A temporary directory holding a config file; removed by cleanup(). The
 * config is YAML text, or data (as-config.ts's asConfig, changed by key)
 * written out with the `yaml` package.
 */
export async function tempConfig(config: string | ConfigTree, name = 'gateway.yaml'): Promise<{ dir: string; file: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'bearward-'))
  const file = join(dir, name)
  await writeFile(file, typeof config === 'string' ? config : configYaml(config))
  return { dir, file, cleanup: () => rm(dir, { recursive: true, force: true }) }
}

/**
 * Start `bin/bearward start -c file` and wait until it logs where it listens
 * (configs use port 0, so the log line is how a test learns the ports).
 */
/**
 * startBin for a harness that set things up first: when the binary does not
 * come up, `cleanup` releases them before the error is rethrown.
 */
export async function startBinOrCleanUp(file: string, cleanup: () => Promise<void>): Promise<RunningBin> {
  try {
    return await startBin(file)
  } catch (err) {
    await cleanup()
    throw err
  }
}

/**
 * `launch`: `node` runs `node bin/bearward` (the test runner's node, no
 * flags); `shebang` executes bin/bearward itself, as an installed binary runs.
 */
export async function startBin(file: string, env: NodeJS.ProcessEnv = {}, timeoutMs = 60_000, launch: 'node' | 'shebang' = 'node'): Promise<RunningBin> {
  const [command, args] = launch === 'node' ? binCommand(process.execPath, [BIN, 'start', '-c', file]) : binCommand(BIN, ['start', '-c', file])
  const child = spawn(command, args, {
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const lines: string[] = []
  const waiters: Array<{ pred: (e: Record<string, unknown>) => boolean; resolve: (e: Record<string, unknown>) => void; timer: NodeJS.Timeout }> = []
  const onLine = (line: string): void => {
    lines.push(line)
    let entry: Record<string, unknown>
    try {
      entry = JSON.parse(line) as Record<string, unknown>
    } catch {
      return
    }
    for (const w of [...waiters]) {
      if (w.pred(entry)) {
        waiters.splice(waiters.indexOf(w), 1)
        clearTimeout(w.timer)
        w.resolve(entry)
      }
    }
  }
  createInterface({ input: child.stdout! }).on('line', onLine)
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString()
  })
  // 'close', not 'exit': it comes once the child's stdout and stderr are drained, so every line
  // it wrote (a buffered log flushed at exit included) is in `lines` when a test reads them.
  const exited = new Promise<number | null>((res) => child.on('close', (code) => res(code)))

  const waitForLog = (pred: (e: Record<string, unknown>) => boolean, ms = 10000): Promise<Record<string, unknown>> => {
    for (const line of lines) {
      try {
        const e = JSON.parse(line) as Record<string, unknown>
        if (pred(e)) return Promise.resolve(e)
      } catch {
        // not JSON
      }
    }
    return new Promise((res, rej) => {
      // The timer is cleared when the line comes: a stale one would remove another waiter (indexOf -1 is the last).
      const t = setTimeout(() => {
        const at = waiters.indexOf(w)
        if (at === -1) return
        waiters.splice(at, 1)
        rej(new Error(`log line not seen within ${ms} ms; stderr: ${stderr}\nlog:\n${lines.join('\n')}`))
      }, ms)
      t.unref()
      const w = { pred, resolve: res, timer: t }
      waiters.push(w)
      exited.then(() => {
        if (waiters.includes(w)) {
          clearTimeout(t)
          waiters.splice(waiters.indexOf(w), 1)
          rej(new Error(`bearward exited before the log line; stderr: ${stderr}\nlog:\n${lines.join('\n')}`))
        }
      })
    })
  }

  const listening = await waitForLog((e) => typeof e.listen === 'string' && e.msg !== undefined && String(e.msg).startsWith('bearward listening'), timeoutMs)
  return {
    url: String(listening.listen),
    admin: String(listening.admin),
    child,
    lines,
    waitForLog,
    exited,
    stop: async (signal: NodeJS.Signals = 'SIGTERM') => {
      if (child.exitCode !== null) return child.exitCode
      child.kill(signal)
      return exited
    },
  }
}

/** Run the CLI to completion. */
export function runCli(args: string[], input?: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(...binCommand(process.execPath, [BIN, ...args]), { env: childEnv(env), stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('close', (code) => res({ code, stdout, stderr }))
    if (input !== undefined) child.stdin.end(input)
    else child.stdin.end()
  })
}
