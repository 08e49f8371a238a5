/**
 * `bearward start` with `workers` > 1, in the primary process: start the
 * admin server and the workers, wire signals, and exit when told to stop.
 */
import type { Server } from 'node:http'
import type { ConfigSnapshot } from '../config/load.js'
import { startPrimaryAdmin } from './admin.js'
import { Primary } from './primary.js'

/** Runs until a signal; resolves with 1 only when the start failed (the reason is on stderr). */
export async function runPrimary(configPath: string, snapshot: ConfigSnapshot, onStarted: (primary: Primary) => void): Promise<number> {
  const primary = new Primary(configPath, snapshot)
  const log = primary.log
  const config = snapshot.config
  let admin: { server: Server; url: string } | null = null
  const closeAdmin = (): Promise<void> =>
    new Promise((resolve) => {
      if (admin === null) return resolve()
      admin.server.close(() => resolve())
      admin.server.closeAllConnections()
    })
  try {
    if (config.adminListen) admin = await startPrimaryAdmin(primary, config.adminListen, log)
    await primary.start()
  } catch (err) {
    await primary.stop()
    await closeAdmin()
    process.stderr.write(`bearward: ${(err as Error).message}\n`)
    log.flush()
    return 1
  }
  log.info(
    { listen: primary.listen, admin: admin?.url ?? null, public_url: config.publicUrl, workers: config.workers },
    `bearward listening on ${primary.listen ?? '?'} with ${config.workers} worker processes`,
  )
  onStarted(primary)
  let stopping = false
  const stop = (signal: string): void => {
    if (stopping) return
    stopping = true
    log.info({ signal }, 'shutting down: draining every worker')
    primary.stop().then(
      async (code) => {
        await closeAdmin()
        log.info('bearward stopped')
        log.flush()
        process.exit(code)
      },
      (err: unknown) => {
        process.stderr.write(`bearward: error during shutdown: ${(err as Error).message}\n`)
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
  process.on('SIGHUP', () => void primary.reload())
  return new Promise<number>(() => {
    // runs until a signal
  })
}
