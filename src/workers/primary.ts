/**
 * The primary process (`workers` > 1): forks the worker processes, which
 * share `listen` through node:cluster, each with its own Runtime; serves
 * admin_listen for all of them; reloads them, restarts the ones that die,
 * and drains them at shutdown. It holds no store connection and serves no
 * traffic itself.
 *
 * Reload: the primary reads the file once and checks it (the config and
 * the signing keys); a bad file is refused there, once, and no worker
 * changes. A good one goes, as text, to every worker, whose reload is all
 * or nothing (App.reload); the primary logs each worker's outcome.
 */
import cluster, { type Worker } from 'node:cluster'
import { readFile } from 'node:fs/promises'
import type { JWK } from 'jose'
import { shutdownBoundMs } from '../server/lifecycle.js'
import { keysNeedingRestart } from '../server/reload-rules.js'
import { configChanges, reloadReport, WarningMemory } from '../server/config-report.js'
import { checkConfig, snapshotOfText, type ConfigSnapshot } from '../config/load.js'
import { ConfigWatcher } from '../config/watch.js'
import type { Config } from '../config/validated-config.js'
import { ConfigError, formatProblem } from '../errors.js'
import { generatePrivateJwk, loadKeySet } from '../keys/keyset.js'
import { createLogger, type Logger } from '../log.js'
import { nextFailureCount, restartDelayMs } from './backoff.js'
import { toPrimary, type ConfigText, type ToWorker } from './messages.js'
import { parseExposition, type Exposition } from './metrics-merge.js'
import { PrimaryMetrics } from './primary-metrics.js'
import { WORKER_INDEX_ENV } from './worker.js'
import { WorkerQuestions } from './worker-questions.js'

/** How long the primary waits for a worker's answer to /metrics or /readyz before going without it. */
const ASK_TIMEOUT_MS = 1500
/** How long a worker may take to build and swap in a reloaded config. */
const RELOAD_TIMEOUT_MS = 30_000
/**
 * How long a worker may take from fork to serving. One that hangs (never
 * listens) is killed and, like one that crashed, started again after the
 * back-off; at the first start, the start fails.
 */
const START_TIMEOUT_MS = 120_000

type SlotState = 'starting' | 'serving' | 'down'

/** One of the N places a worker runs in; its index (1..N) stays when the worker is replaced. */
interface Slot {
  index: number
  worker: Worker | null
  state: SlotState
  /** SHA-256 of the config text the worker runs. */
  digest: string | null
  /** Exits in a row after short lives (backoff.ts). */
  failures: number
  startedAt: number
  restartTimer: NodeJS.Timeout | null
  startTimer: NodeJS.Timeout | null
  /** The worker's latest metrics, kept for when it cannot answer, and left behind when it exits. */
  lastMetrics: Exposition | null
}

export interface WorkerOutcome {
  worker: number
  pid: number | null
  result: 'ok' | 'refused' | 'no answer' | 'not running'
  error?: string
}

export class Primary {
  readonly log: Logger
  readonly #configPath: string
  readonly #env: NodeJS.ProcessEnv
  #current: ConfigSnapshot
  readonly #slots: Slot[]
  #ephemeralJwk: JWK | null = null
  #watcher: ConfigWatcher | null = null
  readonly #questions = new WorkerQuestions((worker, message) => this.#send(worker, message))
  #reloading: Promise<boolean> | null = null
  #stopping = false
  #lastReloadError: string | null = null
  /** The last load's warnings: a reload logs only new ones. */
  readonly #warnings = new WarningMemory()
  /** Set while the first workers start: the whole start fails if one of them does. */
  #initial: { resolve(): void; reject(err: Error): void } | null = null
  #listen: string | null = null
  #allExited: (() => void) | null = null

  readonly #metrics = new PrimaryMetrics()

  constructor(configPath: string, snapshot: ConfigSnapshot, env: NodeJS.ProcessEnv = process.env) {
    this.#configPath = configPath
    this.#env = env
    this.#current = snapshot
    this.log = createLogger(snapshot.config.log.level, undefined, { role: 'primary', pid: process.pid })
    this.#slots = Array.from({ length: snapshot.config.workers }, (_, i) => ({
      index: i + 1,
      worker: null,
      state: 'down' as SlotState,
      digest: null,
      failures: 0,
      startedAt: 0,
      restartTimer: null,
      startTimer: null,
      lastMetrics: null,
    }))
  }

  get config(): Config {
    return this.#current.config
  }

  /** Where the workers listen (known once the first has started). */
  get listen(): string | null {
    return this.#listen
  }

  /** Start every worker; rejects (after stopping the others) when one cannot start. */
  async start(): Promise<void> {
    for (const w of this.#warnings.fresh(this.#current.warnings)) this.log.warn(`config: ${formatProblem(w)}`)
    await this.#prepareKeys(this.config)
    this.#metrics.workers.set(this.#slots.length)
    this.#metrics.configTime.set(Math.floor(Date.now() / 1000))
    const started = new Promise<void>((resolve, reject) => {
      this.#initial = { resolve, reject }
    })
    for (const slot of this.#slots) this.#fork(slot)
    try {
      await started
    } finally {
      this.#initial = null
    }
    this.#watcher = new ConfigWatcher(this.#configPath, () => void this.reload())
    await this.#watcher.start(this.#current.digest)
  }

  /** What workers with a config need beyond the text: the shared signing key when the AS has none configured. */
  async #prepareKeys(config: Config): Promise<void> {
    const as = config.authorizationServer
    if (as === null) return
    if (as.keys.length === 0) {
      // One ephemeral key for every worker, made here and handed to each over IPC:
      // a key per worker would make tokens from one fail at the others.
      this.#ephemeralJwk ??= await generatePrivateJwk('RS256')
      return
    }
    // Refused here, once, rather than by every worker.
    await loadKeySet(as.keys, () => Promise.reject(new Error('unreachable')))
  }

  #configText(): ConfigText {
    return { text: this.#current.text, ephemeralJwk: this.#ephemeralJwk }
  }

  #fork(slot: Slot): void {
    slot.restartTimer = null
    slot.state = 'starting'
    slot.digest = null
    slot.startedAt = Date.now()
    const worker = cluster.fork({ [WORKER_INDEX_ENV]: String(slot.index) })
    slot.worker = worker
    slot.startTimer = setTimeout(() => {
      slot.startTimer = null
      if (slot.worker !== worker || slot.state !== 'starting') return
      this.log.error({ worker: slot.index, worker_pid: worker.process.pid, timeout_ms: START_TIMEOUT_MS }, 'worker did not start in time; killing it')
      worker.process.kill('SIGKILL')
    }, START_TIMEOUT_MS)
    worker.on('message', (raw: unknown) => this.#onMessage(slot, worker, raw))
    worker.on('exit', (code: number | null, signal: string | null) => this.#onExit(slot, worker, code, signal))
    // 'error' on the channel (a send to a worker that just died) is followed by 'exit'.
    worker.on('error', () => undefined)
  }

  #send(worker: Worker, message: ToWorker): boolean {
    if (!worker.isConnected()) return false
    try {
      worker.send(message)
      return true
    } catch {
      return false
    }
  }

  #onMessage(slot: Slot, worker: Worker, raw: unknown): void {
    if (slot.worker !== worker) return
    const m = toPrimary(raw)
    if (m === null) return
    switch (m.type) {
      case 'hello': {
        const config = this.#configText()
        slot.digest = this.#current.digest
        this.#send(worker, { type: 'start', ...config })
        return
      }
      case 'started': {
        if (slot.startTimer !== null) clearTimeout(slot.startTimer)
        slot.startTimer = null
        slot.state = 'serving'
        slot.digest = m.digest
        this.#listen ??= m.listen
        this.#metrics.serving.set(this.#serving().length)
        this.log.info({ worker: slot.index, worker_pid: worker.process.pid }, 'worker started')
        if (this.#initial !== null && this.#slots.every((s) => s.state === 'serving')) this.#initial.resolve()
        // A reload that happened while this worker started: it gets the text in use now.
        if (m.digest !== this.#current.digest) void this.#reloadWorker(slot)
        return
      }
      case 'start-failed':
        this.log.error({ worker: slot.index, worker_pid: worker.process.pid, reason: m.message }, 'worker could not start')
        if (this.#initial !== null) this.#initial.reject(new Error(m.message))
        return
      default:
        this.#questions.answered(worker, m)
    }
  }

  #onExit(slot: Slot, worker: Worker, code: number | null, signal: string | null): void {
    if (slot.worker !== worker) return
    this.#questions.forget(worker)
    if (slot.lastMetrics !== null) this.#metrics.retire(slot.lastMetrics)
    slot.lastMetrics = null
    const wasServing = slot.state === 'serving'
    if (slot.startTimer !== null) clearTimeout(slot.startTimer)
    slot.startTimer = null
    slot.worker = null
    slot.state = 'down'
    this.#metrics.serving.set(this.#serving().length)
    const pid = worker.process.pid ?? null
    if (this.#stopping) {
      this.log.info({ worker: slot.index, worker_pid: pid, code, signal }, 'worker stopped')
      if (this.#slots.every((s) => s.worker === null)) this.#allExited?.()
      return
    }
    if (this.#initial !== null) {
      this.#initial.reject(new Error(`worker ${slot.index} exited while starting (${signal ?? `exit code ${String(code)}`})`))
      return
    }
    const lived = Date.now() - slot.startedAt
    slot.failures = nextFailureCount(slot.failures, wasServing ? lived : 0)
    const delay = restartDelayMs(slot.failures)
    this.#metrics.restarts.inc()
    this.log.error(
      { worker: slot.index, worker_pid: pid, code, signal, lived_ms: lived, restart_in_ms: delay, exits_in_a_row: slot.failures },
      `worker ${slot.index} exited (${signal ?? `exit code ${String(code)}`}); restarting in ${delay} ms`,
    )
    slot.restartTimer = setTimeout(() => this.#fork(slot), delay)
  }

  #serving(): Slot[] {
    return this.#slots.filter((s) => s.state === 'serving' && s.worker !== null)
  }

  async #reloadWorker(slot: Slot): Promise<WorkerOutcome> {
    const worker = slot.worker
    const pid = worker?.process.pid ?? null
    if (worker === null || slot.state !== 'serving') return { worker: slot.index, pid, result: 'not running' }
    const config = this.#configText()
    const answer = await this.#questions.ask(worker, (seq) => ({ type: 'reload', seq, ...config }), RELOAD_TIMEOUT_MS)
    if (answer?.type !== 'reloaded') return { worker: slot.index, pid, result: 'no answer' }
    slot.digest = answer.digest
    return answer.ok ? { worker: slot.index, pid, result: 'ok' } : { worker: slot.index, pid, result: 'refused', error: answer.error ?? 'refused' }
  }

  /**
   * Reload (file change or SIGHUP): check the file here, then reload every
   * worker. Resolves whether every running worker now runs the new config.
   * Reloads are serialized.
   */
  reload(): Promise<boolean> {
    const run = (): Promise<boolean> => this.#reloadOnce()
    const next = (this.#reloading ?? Promise.resolve(true)).then(run, run)
    this.#reloading = next
    return next
  }

  async #reloadOnce(): Promise<boolean> {
    if (this.#stopping) return false
    let snapshot: ConfigSnapshot
    try {
      let text: string
      try {
        text = await readFile(this.#configPath, 'utf8')
      } catch {
        throw new ConfigError((await checkConfig(this.#configPath, this.#env)).problems)
      }
      snapshot = snapshotOfText(text, this.#configPath, this.#env)
      await this.#prepareKeys(snapshot.config)
    } catch (err) {
      const message = (err as Error).message
      this.#lastReloadError = message
      this.#metrics.reloads.inc({ result: 'error' })
      this.log.error(
        { problems: err instanceof ConfigError ? err.problems : undefined },
        `config reload refused, no worker changed; still serving the previous config: ${message}`,
      )
      return false
    }
    for (const w of this.#warnings.fresh(snapshot.warnings)) this.log.warn(`config: ${formatProblem(w)}`)
    for (const key of keysNeedingRestart(this.config, snapshot.config)) {
      this.log.warn({ key }, `config: ${key} changed; it takes effect at the next restart`)
    }
    const previous = this.#current
    this.#current = snapshot
    if (snapshot.config.log.level !== this.log.level) this.log.level = snapshot.config.log.level
    const outcomes = await Promise.all(this.#slots.map((slot) => this.#reloadWorker(slot)))
    const refused = outcomes.filter((o) => o.result === 'refused' || o.result === 'no answer')
    if (refused.length > 0 && refused.length === outcomes.filter((o) => o.result !== 'not running').length) {
      // No worker took it: the previous text stays the one new workers start with.
      this.#current = previous
    }
    this.#watcher?.loaded(snapshot.digest)
    if (refused.length === 0) {
      this.#lastReloadError = null
      this.#metrics.reloads.inc({ result: 'ok' })
      this.#metrics.configTime.set(Math.floor(Date.now() / 1000))
      const changed = reloadReport(configChanges(previous.config, snapshot.config))
      this.log.info(changed.fields, changed.msg)
      this.log.info({ routes: snapshot.config.routes.length, workers: outcomes }, 'config reloaded')
      return true
    }
    this.#lastReloadError = refused.map((o) => `worker ${o.worker}: ${o.error ?? o.result}`).join('; ')
    this.#metrics.reloads.inc({ result: 'error' })
    this.log.error({ workers: outcomes }, `config reload refused by ${refused.length} of ${outcomes.length} workers: ${this.#lastReloadError}`)
    return false
  }

  /** /readyz: ready when every worker is started and answers ready. */
  async readiness(): Promise<{ ready: boolean; body: Record<string, unknown> }> {
    const workers = await Promise.all(
      this.#slots.map(async (slot): Promise<Record<string, unknown>> => {
        const worker = slot.worker
        if (worker === null || slot.state !== 'serving') return { worker: slot.index, status: slot.state === 'starting' ? 'starting' : 'down' }
        const answer = await this.#questions.ask(worker, (seq) => ({ type: 'ask', seq, what: 'readiness' }), ASK_TIMEOUT_MS)
        if (answer?.type !== 'readiness') return { worker: slot.index, pid: worker.process.pid, status: 'no answer' }
        return { worker: slot.index, pid: worker.process.pid, ...answer.body, status: answer.ready ? 'ready' : 'unavailable' }
      }),
    )
    const reasons: string[] = []
    if (this.#stopping) reasons.push('shutting down')
    const notReady = workers.filter((w) => w.status !== 'ready').length
    if (notReady > 0) reasons.push(`${notReady} of ${workers.length} workers not ready`)
    const body: Record<string, unknown> = { status: reasons.length ? 'unavailable' : 'ready', workers }
    if (reasons.length) body.reasons = reasons
    if (this.#lastReloadError) body.last_reload_error = this.#lastReloadError
    return { ready: reasons.length === 0, body }
  }

  /** /metrics: every worker's metrics added up (metrics-merge.ts), then the primary's own. */
  async metrics(): Promise<string> {
    await Promise.all(
      this.#serving().map(async (slot) => {
        const worker = slot.worker as Worker
        const answer = await this.#questions.ask(worker, (seq) => ({ type: 'ask', seq, what: 'metrics' }), ASK_TIMEOUT_MS)
        if (answer?.type === 'metrics' && slot.worker === worker) slot.lastMetrics = parseExposition(answer.text)
      }),
    )
    return this.#metrics.render(this.#slots.flatMap((slot) => (slot.lastMetrics === null ? [] : [{ worker: slot.index, exposition: slot.lastMetrics }])))
  }

  /** Drain every worker (each finishes its in-flight requests), then resolve with the exit code. */
  async stop(): Promise<number> {
    if (this.#stopping) return 0
    this.#stopping = true
    this.#watcher?.close()
    for (const slot of this.#slots) {
      if (slot.restartTimer !== null) clearTimeout(slot.restartTimer)
      slot.restartTimer = null
    }
    const alive = this.#slots.filter((s) => s.worker !== null)
    if (alive.length === 0) return 0
    const exited = new Promise<void>((resolve) => {
      this.#allExited = resolve
    })
    for (const slot of alive) {
      const worker = slot.worker as Worker
      // Not yet told its config, or its channel is gone: a signal does what the message would.
      if (slot.state !== 'serving' || !this.#send(worker, { type: 'shutdown' })) worker.process.kill('SIGTERM')
    }
    const bound = shutdownBoundMs(this.config.shutdownTimeoutMs)
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), bound)
    })
    const result = await Promise.race([exited.then(() => 'done' as const), late])
    clearTimeout(timer)
    if (result === 'late') {
      for (const slot of this.#slots) slot.worker?.process.kill('SIGKILL')
      this.log.error({ bound_ms: bound }, 'workers did not finish draining in time; killed')
      return 1
    }
    return 0
  }
}
