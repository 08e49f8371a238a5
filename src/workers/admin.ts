/**
 * admin_listen when there are worker processes: the primary answers
 * /healthz itself and /readyz and /metrics for all workers together
 * (primary.ts asks each over IPC). The same server and answers as a single
 * process's (src/server/admin.ts), plus a `workers` list in /readyz.
 */
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ListenAddress } from '../config/validated-config.js'
import type { Logger } from '../log.js'
import { createAdminServer } from '../server/admin.js'
import { listenOn, urlOf } from '../server/listen.js'
import type { Primary } from './primary.js'

/** Listen on `addr`; resolves with the server and its URL. */
export async function startPrimaryAdmin(primary: Primary, addr: ListenAddress, log: Logger): Promise<{ server: Server; url: string }> {
  const server = createAdminServer({ readiness: () => primary.readiness(), metrics: () => primary.metrics() }, log)
  await listenOn(server, addr)
  return { server, url: urlOf(server.address() as AddressInfo, false) }
}
