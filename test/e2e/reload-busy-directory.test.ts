/**
 * A config reload is not postponed by other files in the config's
 * directory (issue #28.10): bin/bearward watches the directory, and a log
 * or a key file written there every 50 ms used to restart the watcher's
 * debounce on each write, so an edited config was never reloaded while the
 * writing went on. One process and `workers: 2` (where the primary watches)
 * must both reload within a second or so of the edit.
 */
import t, { type Test } from 'tap'
import { appendFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { eventually } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { startUpstream } from '../helpers/upstream.js'

const config = (upstream: string, extra: string, routes: string): string => `
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
public_url: http://bearward.test
log: { level: info }
${extra}
routes:
  - name: pub
    match: { path: /pub }
    upstream: ${upstream}
    public: true
${routes}`

const ADDED = (upstream: string): string => `  - name: added
    match: { path: /added }
    upstream: ${upstream}
    public: true
`

/** Writes `access.log` beside the config every 50 ms until stopped; resolves once it has written a few times. */
async function busyNeighbour(t: Test, dir: string): Promise<{ readonly writes: number }> {
  let writing = true
  const state = { writes: 0 }
  const loop = (async () => {
    while (writing) {
      await appendFile(join(dir, 'access.log'), `line ${state.writes++}\n`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })()
  t.teardown(async () => {
    writing = false
    await loop
  })
  t.ok(await eventually(() => state.writes >= 5, 5000, 10), 'the neighbour file is being written')
  return state
}

async function editedConfigIsReloaded(
  t: Test,
  bin: RunningBin,
  file: string,
  edited: string,
  fromWatcher: (e: Record<string, unknown>) => boolean,
): Promise<void> {
  const neighbour = await busyNeighbour(t, join(file, '..'))
  t.equal((await fetch(`${bin.url}/added`)).status, 404, 'no /added route yet')
  const started = Date.now()
  await writeFile(file, edited)
  const reloaded = await bin
    .waitForLog((e) => e.msg === 'config reloaded' && fromWatcher(e), 5_000)
    .then(
      () => true,
      () => false,
    )
  const waited = Date.now() - started
  t.ok(reloaded, `the edit was reloaded while access.log was written every 50 ms (${waited} ms, ${neighbour.writes} writes)`)
  t.ok(waited < 4_000, 'within the watcher bound (1 s after the first event) plus the reload itself')
  t.ok(await eventually(async () => (await fetch(`${bin.url}/added`)).status === 200, 5_000), 'the added route answers')
}

t.test('one process: a busy neighbour file does not hold back the reload', async (t) => {
  const up = await startUpstream('up')
  const dir = await tempConfig('')
  const base = config(up.url, 'store: memory', '')
  await writeFile(dir.file, base)
  const bin = await startBin(dir.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await dir.cleanup()
  })
  await editedConfigIsReloaded(t, bin, dir.file, config(up.url, 'store: memory', ADDED(up.url)), () => true)
})

t.test('workers: 2: the primary watches, and a busy neighbour file does not hold back the reload', async (t) => {
  const redis = await startRedis()
  const up = await startUpstream('up')
  const dir = await tempConfig('')
  const store = `store: { url: "${redis.url}", key_prefix: "${redis.prefix}" }\nworkers: 2`
  await writeFile(dir.file, config(up.url, store, ''))
  const bin = await startBin(dir.file, {}, 120_000)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await redis.stop()
    await dir.cleanup()
  })
  await editedConfigIsReloaded(t, bin, dir.file, config(up.url, store, ADDED(up.url)), (e) => e.role === 'primary')
})
