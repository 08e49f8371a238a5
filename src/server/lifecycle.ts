/**
 * How a bearward process stops, the same for a single process, the primary
 * of `workers` and each worker: SIGTERM and SIGINT start one shutdown (a
 * second signal while it runs changes nothing), SIGHUP reloads where the
 * process has something to reload, and a backstop timer ends a shutdown
 * that does not finish in time with exit code 1.
 */

/** Added to `shutdown_timeout` for the bound on a whole shutdown: the drain, then closing the store and the pools. */
const CLOSE_ALLOWANCE_MS = 15_000

/** How long a process's own shutdown may take: its drain (`shutdown_timeout`) and then closing what it holds. */
export function shutdownBoundMs(shutdownTimeoutMs: number): number {
  return shutdownTimeoutMs + CLOSE_ALLOWANCE_MS
}

/** The parts of `process` a lifecycle uses; a test passes its own. */
export interface ProcessHandle {
  on(event: 'SIGTERM' | 'SIGINT' | 'SIGHUP', listener: () => void): unknown
  exit(code: number): void
  readonly stderr: { write(text: string): unknown }
}

export interface ShutdownPlan {
  /** Who is stopping, as stderr lines name it: `bearward`, `bearward worker 2`. */
  readonly name: string
  /** Runs once, at the first stop, with its reason (the signal's name, or who asked); resolves with the exit code. */
  readonly close: (reason: string) => Promise<number>
  /** How long `close` may take before the process exits 1 without it; asked at the first stop, so a reloaded `shutdown_timeout` counts. */
  readonly backstopMs: () => number
  /** What SIGHUP does; null leaves SIGHUP to whoever installed a handler for it (or to Node's default, ending the process). */
  readonly reload: (() => void) | null
}

/**
 * Wires SIGTERM, SIGINT and SIGHUP to `plan`, and returns `stop`, which
 * starts the same shutdown for any other reason (the primary's word to a
 * worker). The process exits with `close`'s code, with 1 when it fails, or
 * with 1 when the backstop fires first.
 */
export function handleSignals(plan: ShutdownPlan, proc: ProcessHandle = process): (reason: string) => void {
  let stopping = false
  const stop = (reason: string): void => {
    if (stopping) return
    stopping = true
    // Held (not unref'd) until close() settles, when it is cleared: the shutdown's own
    // waits are unref'd timers and promises, and a process whose loop emptied while one
    // of them was pending would end there, silently, without closing the store, flushing
    // spans or saying it stopped (an upstream exchange that never settled did that).
    // Whatever close() waits for, the process now waits with it, at most `bound`.
    const bound = plan.backstopMs()
    const backstop = setTimeout(() => {
      proc.stderr.write(`${plan.name}: shutdown did not finish within ${bound} ms; exiting\n`)
      proc.exit(1)
    }, bound)
    let closing: Promise<number>
    try {
      closing = plan.close(reason)
    } catch (err) {
      closing = Promise.reject(err)
    }
    closing.then(
      (code) => {
        clearTimeout(backstop)
        proc.exit(code)
      },
      (err: unknown) => {
        clearTimeout(backstop)
        proc.stderr.write(`${plan.name}: error during shutdown: ${err instanceof Error ? err.message : String(err)}\n`)
        proc.exit(1)
      },
    )
  }
  proc.on('SIGTERM', () => stop('SIGTERM'))
  proc.on('SIGINT', () => stop('SIGINT'))
  const reload = plan.reload
  if (reload !== null) proc.on('SIGHUP', () => reload())
  return stop
}

/** For a process whose reloads someone else orders (a worker, told by its primary): SIGHUP's default would end it. */
export function ignoreHangup(proc: Pick<ProcessHandle, 'on'> = process): void {
  proc.on('SIGHUP', () => undefined)
}
