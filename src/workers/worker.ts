/**
 * A worker process (`workers` > 1): one App serving the shared `listen`
 * with its own Runtime, on the config text its primary read and checked.
 * The primary serves admin_listen and asks the worker, over the IPC
 * channel, for its metrics and readiness; reloads and shutdown come the
 * same way.
 */
import { createHash } from 'node:crypto'
import { App } from '../app.js'
import { snapshotOfText } from '../config/load.js'
import { ConfigError, formatProblem } from '../errors.js'
import { handleSignals, ignoreHangup, shutdownBoundMs } from '../server/lifecycle.js'
import { toWorker, type ConfigText, type ToPrimary, type ToWorker } from './messages.js'

/** The environment variable that tells a forked process which worker it is (1..N). */
export const WORKER_INDEX_ENV = 'BEARWARD_WORKER'

function send(message: ToPrimary): void {
  // The channel is gone when the primary died; the cluster module then ends this process.
  if (process.connected) process.send?.(message)
}

function digestOf(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex')
}

/** The first message of a kind from the primary. */
function nextMessage<T extends ToWorker['type']>(type: T): Promise<Extract<ToWorker, { type: T }>> {
  return new Promise((resolve) => {
    const onMessage = (raw: unknown): void => {
      const m = toWorker(raw)
      if (m?.type !== type) return
      process.off('message', onMessage)
      resolve(m as Extract<ToWorker, { type: T }>)
    }
    process.on('message', onMessage)
  })
}

/** Run as worker process; resolves only with an exit code when it could not start. */
export async function runWorker(configPath: string, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const index = env[WORKER_INDEX_ENV] ?? '?'
  // SIGHUP is the primary's to act on (it reloads every worker).
  ignoreHangup()
  const started = nextMessage('start')
  send({ type: 'hello' })
  const start = await started
  let current: ConfigText = { text: start.text, ephemeralJwk: start.ephemeralJwk }
  let app: App
  try {
    app = await App.start({
      configPath,
      env,
      watch: false,
      admin: false,
      loadConfig: async () => snapshotOfText(current.text, configPath, env),
      logBindings: { worker: Number(index) || index, pid: process.pid },
      ephemeralKey: async () => {
        if (current.ephemeralJwk === null) throw new Error('the primary sent no signing key for a config without keys')
        return current.ephemeralJwk
      },
    })
  } catch (err) {
    const message = err instanceof ConfigError ? `invalid config, not starting:\n${err.problems.map(formatProblem).join('\n')}` : (err as Error).message
    process.stderr.write(`bearward worker ${index}: ${message}\n`)
    // The open IPC channel would keep this process alive: exit once the message is out.
    const exit = (): never => process.exit(1)
    if (process.connected && process.send !== undefined) process.send({ type: 'start-failed', message } satisfies ToPrimary, exit)
    else exit()
    return 1
  }

  // A signal sent to the whole process group (Ctrl-C, systemd) reaches workers too: they drain as on the primary's word.
  const stop = handleSignals({
    name: `bearward worker ${index}`,
    close: async (reason) => {
      app.log.info({ reason }, 'worker shutting down')
      await app.close()
      return 0
    },
    backstopMs: () => shutdownBoundMs(app.runtime.config.shutdownTimeoutMs),
    reload: null,
  })

  const onMessage = async (raw: unknown): Promise<void> => {
    const m = toWorker(raw)
    if (m === null) return
    switch (m.type) {
      case 'reload': {
        const previous = current
        current = { text: m.text, ephemeralJwk: m.ephemeralJwk ?? previous.ephemeralJwk }
        const ok = await app.reload()
        let error: string | null = null
        if (!ok) {
          current = previous
          const { body } = await app.readiness()
          error = typeof body.last_reload_error === 'string' ? body.last_reload_error : 'refused'
        }
        send({ type: 'reloaded', seq: m.seq, ok, digest: digestOf(current.text), error })
        return
      }
      case 'ask':
        if (m.what === 'metrics') send({ type: 'metrics', seq: m.seq, text: app.shared.metrics.render() })
        else send({ type: 'readiness', seq: m.seq, ...(await app.readiness()) })
        return
      case 'shutdown':
        stop('asked by the primary')
        return
      case 'start':
        return
    }
  }
  process.on('message', (raw: unknown) => void onMessage(raw))
  send({ type: 'started', listen: app.addresses().listen, digest: digestOf(current.text) })
  return new Promise<number>(() => {
    // runs until the primary or a signal stops it
  })
}
