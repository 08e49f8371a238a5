// A throwaway redis-server for one benchmark run: a free port (never 6379),
// no persistence, bound to loopback, stopped by the caller.
import { connect } from 'node:net'
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

/**
 * Redis commands per request, counted by the server (MONITOR): `fn(i)` makes
 * request i, one at a time, `n` times. Commands run inside a Lua script (the
 * MONITOR source `lua`) are not counted, being no round trip of their own,
 * nor PING (the store's heartbeat); neither is anything on the bench's own
 * connections opened before `fn` runs (this MONITOR connection). Commands sent
 * together (pipelined) count one each, so this is an upper bound on the round
 * trips.
 */
export async function redisCommandsPerRequest(port, n, fn) {
  // EVALSHA is shown as the product's script name (dist/store/redis/all-scripts.js).
  const scripts = await import(new URL('../../dist/store/redis/all-scripts.js', import.meta.url).href)
  const scriptNames = new Map(
    Object.values(scripts)
      .filter((v) => v && typeof v === 'object' && typeof v.sha === 'string')
      .map((v) => [v.sha, v.name]),
  )
  const sock = connect(port, '127.0.0.1')
  await new Promise((resolve, reject) => {
    sock.once('connect', resolve)
    sock.once('error', reject)
  })
  let buf = ''
  let counted = 0
  let started = false
  const names = new Map()
  sock.on('data', (d) => {
    buf += d
    let nl = buf.indexOf('\r\n')
    while (nl !== -1) {
      const line = buf.slice(0, nl)
      buf = buf.slice(nl + 2)
      nl = buf.indexOf('\r\n')
      if (line === '+OK') {
        started = true
        continue
      }
      // +1700000000.123456 [0 127.0.0.1:5555] "hmget" "key" ...
      const m = /^\+[\d.]+ \[\d+ ([^\]]+)\] "([^"]+)"(?: "([^"]*)")?/.exec(line)
      if (!m || m[1] === 'lua') continue
      const command = m[2].toLowerCase()
      const name = command === 'evalsha' ? (scriptNames.get(m[3]) ?? 'evalsha') : command
      if (name === 'ping' || name === 'echo') continue
      counted += 1
      names.set(name, (names.get(name) ?? 0) + 1)
    }
  })
  sock.write('MONITOR\r\n')
  while (!started) await new Promise((r) => setTimeout(r, 5))
  for (let i = 0; i < n; i++) await fn(i)
  // A marker on another connection: once MONITOR shows it, every command before it was seen.
  const marker = connect(port, '127.0.0.1')
  await new Promise((resolve) => marker.once('connect', resolve))
  let done = false
  const check = (d) => {
    if (String(d).includes('"echo" "bench-count-end"')) done = true
  }
  sock.on('data', check)
  marker.write('ECHO bench-count-end\r\n')
  const until = Date.now() + 5000
  while (!done && Date.now() < until) await new Promise((r) => setTimeout(r, 5))
  marker.destroy()
  sock.destroy()
  return { perRequest: counted / n, byCommand: Object.fromEntries(names) }
}
