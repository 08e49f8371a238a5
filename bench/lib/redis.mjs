// A throwaway redis-server for one benchmark run: a free port (never 6379),
// no persistence, bound to loopback, stopped by the caller.
import { freePort, redisPing, startProcess } from './spawn.mjs'

/** Start redis-server; resolves `{ url, port, stop, pid, rss }`. */
export async function startRedis(logDir, name = 'redis') {
  let port = await freePort()
  while (port === 6379) port = await freePort()
  const handle = await startProcess({
    name,
    command: 'redis-server',
    args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--protected-mode', 'yes', '--loglevel', 'warning'],
    logDir,
    probe: async () => ((await redisPing(port)) ? `redis://127.0.0.1:${port}` : null),
  })
  return { ...handle, port }
}
