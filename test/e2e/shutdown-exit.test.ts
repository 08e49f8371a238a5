/**
 * After SIGTERM drains a slow request, the process ends as soon as it says
 * "bearward stopped": nothing it opened (an upstream connection, a timer, a
 * background compile) keeps it alive. The first upstream exchange of a fresh
 * process is the case that lingered (about 1.8 s): undici's llhttp
 * WebAssembly was being optimized on a V8 background thread, which exit
 * waits for (src/server/wasm-tier.ts).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { startBin, tempConfig } from '../helpers/bin.js'
import { closeServer } from '../helpers/http.js'

/** How long after its last line the process may take to be gone. */
const EXIT_BOUND_MS = 500

t.test('after draining a slow request, the process exits right after "bearward stopped"', async (t) => {
  // The upstream holds its answer until the test lets it go: the request is in flight at SIGTERM.
  let arrived: () => void = () => undefined
  const requestArrived = new Promise<void>((resolve) => (arrived = resolve))
  let held: ServerResponse | null = null
  const upstream = createServer((_req: IncomingMessage, res: ServerResponse) => {
    held = res
    arrived()
  })
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve))
  const cfg = await tempConfig(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
public_url: http://gw.test
log: { level: info }
shutdown_timeout: 10s
routes:
  - name: slow
    match: { path: /slow }
    upstream: http://127.0.0.1:${(upstream.address() as AddressInfo).port}
    public: true
`)
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop('SIGKILL')
    await closeServer(upstream)
    await cfg.cleanup()
  })
  const exitedAt = new Promise<number>((resolve) => bin.child.once('exit', () => resolve(performance.now())))

  const answer = fetch(`${bin.url}/slow/report`).then(async (res) => ({ status: res.status, body: await res.text() }))
  await requestArrived
  bin.child.kill('SIGTERM')
  await bin.waitForLog((e) => e.msg === 'shutting down')
  const finish = held as ServerResponse | null
  finish?.end('the slow answer')
  t.same(await answer, { status: 200, body: 'the slow answer' }, 'the request in flight at SIGTERM is answered')

  await bin.waitForLog((e) => e.msg === 'bearward stopped')
  const stoppedAt = performance.now()
  const lingered = (await exitedAt) - stoppedAt
  t.equal(await bin.exited, 0, 'exit code 0')
  t.ok(lingered < EXIT_BOUND_MS, `gone ${Math.max(0, Math.round(lingered))} ms after "bearward stopped" (bound ${EXIT_BOUND_MS} ms)`)
})
