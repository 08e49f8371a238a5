import t from 'tap'
import { writeFile, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { startBin, tempConfig } from '../helpers/bin.js'
import { startUpstream } from '../helpers/upstream.js'
import { eventually } from '../helpers/http.js'

const base = (routes: string): string => `
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
public_url: http://127.0.0.1:8080
store: memory
log: { level: info }
routes:
${routes}
`

const route = (name: string, path: string, upstream: string): string => `
  - name: ${name}
    match: { path: ${path} }
    upstream: ${upstream}
    public: true
`

t.test('serves health, readiness and metrics on the admin port; SIGTERM exits 0', async (t) => {
  const up = await startUpstream('a')
  const cfg = await tempConfig(base(route('a', '/a', up.url)))
  t.teardown(async () => {
    await up.close()
    await cfg.cleanup()
  })
  const bin = await startBin(cfg.file)
  const health = await fetch(`${bin.admin}/healthz`)
  t.equal(health.status, 200)
  t.same(await health.json(), { status: 'ok' })
  const ready = await fetch(`${bin.admin}/readyz`)
  t.equal(ready.status, 200)
  t.match(await ready.json(), { status: 'ready', store: 'memory' })
  const viaRoute = await fetch(`${bin.url}/a/x`)
  t.equal(viaRoute.status, 200)
  t.match(await viaRoute.json(), { upstream: 'a', url: '/a/x' })
  t.ok(viaRoute.headers.get('x-request-id'), 'every answer carries a request id')
  const missing = await fetch(`${bin.url}/nowhere`)
  t.equal(missing.status, 404, 'no route matches: 404, fail closed')
  const metrics = await (await fetch(`${bin.admin}/metrics`)).text()
  t.match(metrics, /bearward_requests_total\{outcome="200",route="a"\} 1/)
  t.match(metrics, /bearward_request_duration_seconds_bucket\{outcome="200",route="a",le="\+Inf"\} 1/)
  t.equal(await bin.stop('SIGTERM'), 0)
})

t.test('metrics count each request by route and outcome: a status code, or "aborted" when the client left first', async (t) => {
  let upstreamHeard: () => void = () => {}
  const heard = new Promise<void>((resolve) => (upstreamHeard = resolve))
  const up = await startUpstream('a', (req, res) => {
    // /a/hang is never answered; the client gives up on it.
    if (req.url === '/a/hang') {
      upstreamHeard()
      return
    }
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end('ok')
  })
  const cfg = await tempConfig(base(route('a', '/a', up.url)))
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  for (let i = 0; i < 3; i++) t.equal((await fetch(`${bin.url}/a/x`)).status, 200)
  t.equal((await fetch(`${bin.url}/nowhere`)).status, 404)
  const gone = new AbortController()
  const hanging = fetch(`${bin.url}/a/hang`, { signal: gone.signal }).catch((err: unknown) => err)
  await heard
  gone.abort()
  t.match(await hanging, { name: 'AbortError' })
  const series = (text: string, outcome: string, route: string): string | undefined =>
    new RegExp(`^bearward_requests_total\\{outcome="${outcome}",route="${route}"\\} (\\d+)$`, 'm').exec(text)?.[1]
  const counted = await eventually(async () => {
    const metrics = await (await fetch(`${bin.admin}/metrics`)).text()
    return series(metrics, 'aborted', 'a') === '1'
  })
  t.ok(counted, 'the abandoned request is counted')
  const metrics = await (await fetch(`${bin.admin}/metrics`)).text()
  t.equal(series(metrics, '200', 'a'), '3')
  t.equal(series(metrics, '404', 'not_found'), '1')
  t.equal(series(metrics, 'aborted', 'a'), '1', 'the abandoned request is counted as aborted, not by a status')
  t.notMatch(metrics, /outcome="504"|outcome="502"/, 'and not as an upstream failure')
})

t.test('hot reload: a changed file is served without restart; an invalid file is refused and the old config keeps serving', async (t) => {
  const upA = await startUpstream('a')
  const upB = await startUpstream('b')
  const cfg = await tempConfig(base(route('a', '/a', upA.url)))
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await upA.close()
    await upB.close()
    await cfg.cleanup()
  })
  t.equal((await fetch(`${bin.url}/b`)).status, 404, '/b is not routed yet')

  // Editors write a temp file and rename it over the original.
  const tmp = join(cfg.dir, '.gateway.yaml.swp')
  await writeFile(tmp, base(route('a', '/a', upA.url) + route('b', '/b', upB.url)))
  await rename(tmp, cfg.file)
  let lastStatus = 0
  const served = await eventually(async () => (lastStatus = (await fetch(`${bin.url}/b`)).status) === 200)
  t.ok(served, 'the new route is served', { lastStatus, log: served ? undefined : bin.lines.slice(-8) })
  t.match(await (await fetch(`${bin.url}/b/1`)).json(), { upstream: 'b' })

  await writeFile(cfg.file, base(route('a', '/a', upA.url) + '  - name: broken\n    match: { pth: /c }\n'))
  await bin.waitForLog((e) => typeof e.msg === 'string' && e.msg.startsWith('config reload refused'))
  t.equal((await fetch(`${bin.url}/b`)).status, 200, 'the previous config still serves /b')
  const ready = await fetch(`${bin.admin}/readyz`)
  const body = (await ready.json()) as { last_reload_error?: string }
  t.match(body.last_reload_error, /gateway\.yaml:\d+:\d+/, '/readyz shows the positioned reload error')
  const metrics = await (await fetch(`${bin.admin}/metrics`)).text()
  t.match(metrics, /bearward_config_reloads_total\{result="error"\} 1/)
  t.match(metrics, /bearward_config_reloads_total\{result="ok"\} 1/)

  // SIGHUP reloads even when the file did not change.
  await writeFile(cfg.file, base(route('a', '/a', upA.url)))
  t.ok(await eventually(async () => (await fetch(`${bin.url}/b`)).status === 404), 'fixing the file applies it; /b is gone')
  const before = bin.lines.filter((l) => l.includes('"config reloaded"')).length
  bin.child.kill('SIGHUP')
  t.ok(await eventually(async () => bin.lines.filter((l) => l.includes('"config reloaded"')).length > before), 'SIGHUP reloads')
})

t.test('graceful shutdown lets an in-flight request finish', async (t) => {
  let release: () => void = () => {}
  const gate = new Promise<void>((r) => (release = r))
  let arrived: () => void = () => {}
  const arrival = new Promise<void>((r) => (arrived = r))
  const up = await startUpstream('slow', (_req, res) => {
    arrived()
    void gate.then(() => res.end('done'))
  })
  const cfg = await tempConfig(base(route('slow', '/slow', up.url)))
  t.teardown(async () => {
    await up.close()
    await cfg.cleanup()
  })
  const bin = await startBin(cfg.file)
  const pending = fetch(`${bin.url}/slow`)
  await arrival
  bin.child.kill('SIGTERM')
  await bin.waitForLog((e) => e.msg === 'shutting down')
  release()
  const res = await pending
  t.equal(res.status, 200)
  t.equal(await res.text(), 'done', 'the in-flight request completed')
  t.equal(await bin.exited, 0, 'exit code 0')
})
