/**
 * `bearward start` with `workers` > 1, in the primary process: start the
 * admin server and the workers, wire signals, and exit when told to stop.
 */
import type { Server } from 'node:http'
import type { ConfigSnapshot } from '../config/load.js'
import { handleSignals, shutdownBoundMs } from '../server/lifecycle.js'
import { startupReport } from '../server/config-report.js'
import { startPrimaryAdmin } from './admin.js'
import { Primary } from './primary.js'

/** What the primary has, after its workers' bound, to close admin_listen and log how the shutdown went. */
const PRIMARY_REPORT_MS = 5_000

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
  if (primary.listen !== null) for (const line of startupReport(config, primary.listen)) log.info(line.fields, line.msg)
  onStarted(primary)
  handleSignals({
    name: 'bearward',
    close: async (signal) => {
      log.info({ signal }, 'shutting down: draining every worker')
      const code = await primary.stop()
      await closeAdmin()
      log.info('bearward stopped')
      log.flush()
      return code
    },
    // Beyond the workers' own bound (Primary.stop kills them there), so the primary has time to report it.
    backstopMs: () => shutdownBoundMs(primary.config.shutdownTimeoutMs) + PRIMARY_REPORT_MS,
    reload: () => void primary.reload(),
  })
  return new Promise<number>(() => {
    // runs until a signal
  })
}
