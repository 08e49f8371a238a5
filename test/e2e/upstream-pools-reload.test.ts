/**
 * A pooled route through the real binary (issue #44): an unreachable
 * target is ejected and says so on /metrics; a config reload that keeps
 * the route keeps the target ejected (it is not tried again, so no request
 * meets it); a reload that removes the route removes its series once the
 * old configuration drained.
 */
import t from 'tap'
import { rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startBin, tempConfig } from '../helpers/bin.js'
import { startUpstream } from '../helpers/upstream.js'
import { eventually, freePort } from '../helpers/http.js'

t.setTimeout(120_000)

/** A port nothing listens on. */
async function deadPort(): Promise<number> {
  return freePort()
}

function metricValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

t.test('an ejected target stays ejected across a reload; a removed route takes its series away', async (t) => {
  const live = await startUpstream('live')
  const dead = `http://127.0.0.1:${await deadPort()}`
  const adminPort = await freePort()
  const cfg = await tempConfig('')
  const write = async (routes: string): Promise<void> => {
    const tmp = join(cfg.dir, '.next.yaml')
    await writeFile(tmp, `listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:${adminPort}\nroutes:\n${routes}`)
    await rename(tmp, cfg.file)
  }
  const pool = `  - name: pool
    match: { path: /pool }
    public: true
    upstream: [${dead}, ${live.url}]
`
  const other = `  - name: other
    match: { path: /other }
    public: true
    upstream: ${live.url}
`
  await write(pool)
  const bin = await startBin(cfg.file, {}, 30_000)
  t.teardown(async () => {
    await bin.stop()
    await live.close()
    await cfg.cleanup()
  })
  const healthy = `bearward_upstream_healthy{route="pool",target="${dead}"}`
  const failures = `bearward_upstream_connect_failures_total{route="pool",target="${dead}"}`
  const metrics = async (): Promise<string> => (await fetch(`${bin.admin}/metrics`)).text()

  const statuses: number[] = []
  for (let i = 0; i < 8; i++) statuses.push((await fetch(`${bin.url}/pool/a${i}`)).status)
  t.same(statuses, Array(8).fill(200), 'every GET answered: those that met the dead target went to the live one')
  const ejected = await bin.waitForLog((e) => e.msg === 'upstream target ejected' && e.target === dead, 10_000)
  t.equal(ejected.route, 'pool')
  const before = await metrics()
  t.equal(metricValue(before, healthy), 0, '/metrics shows the target ejected')
  const failed = metricValue(before, failures)
  t.equal(failed, 3, 'after unhealthy_after (3) connect failures')

  const reloads = bin.lines.length
  await write(pool + other)
  await bin.waitForLog((e) => e.msg === 'config reloaded' && e.routes === 2, 15_000)
  t.ok(bin.lines.length > reloads)
  const after = []
  for (let i = 0; i < 8; i++) after.push((await fetch(`${bin.url}/pool/b${i}`)).status)
  t.same(after, Array(8).fill(200))
  const kept = await metrics()
  t.equal(metricValue(kept, healthy), 0, 'still ejected after the reload')
  t.equal(metricValue(kept, failures), failed, 'and not tried again by the new configuration')
  t.equal(live.seen.filter((s) => s.url.startsWith('/pool/b')).length, 8)
  const ejections = bin.lines.filter((line) => line.includes('"upstream target ejected"') && line.includes(dead))
  t.equal(ejections.length, 1, 'the ejection was logged once, not again by the reload')

  await write(other)
  await bin.waitForLog((e) => e.msg === 'config reloaded' && e.routes === 1, 15_000)
  t.ok(
    await eventually(async () => metricValue(await metrics(), healthy) === undefined, 15_000, 50),
    'the removed route has no series once the old configuration drained',
  )
})
