/**
 * The config watcher follows the ways a file really changes: a Kubernetes
 * ConfigMap volume (the kubelet writes a new timestamped directory, points
 * `..data_tmp` at it and renames that over `..data`; the config file is a
 * symlink through `..data` that never changes itself), and an editor's
 * write-and-rename.
 */
import t from 'tap'
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createHash } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { ConfigWatcher } from '../../src/config/watch.js'
import { eventually } from '../helpers/http.js'

const sha = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex')

/** Resolves at the watcher's next change, or rejects after `ms`. */
function nextChange(changes: Array<() => void>, ms = 10_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no change seen within ${ms} ms`)), ms)
    changes.push(() => {
      clearTimeout(timer)
      resolve()
    })
  })
}

t.test('a ConfigMap volume update (the ..data symlink swap) is seen', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'bearward-configmap-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  // The kubelet's layout: ..<timestamp>/gateway.yaml, ..data -> ..<timestamp>, gateway.yaml -> ..data/gateway.yaml
  const first = 'listen: 8080\n'
  await mkdir(join(dir, '..2026_11_23_22_00_00.000000001'))
  await writeFile(join(dir, '..2026_11_23_22_00_00.000000001', 'gateway.yaml'), first)
  await symlink('..2026_11_23_22_00_00.000000001', join(dir, '..data'))
  await symlink('..data/gateway.yaml', join(dir, 'gateway.yaml'))

  const waiting: Array<() => void> = []
  let changes = 0
  const watcher = new ConfigWatcher(
    join(dir, 'gateway.yaml'),
    () => {
      changes++
      waiting.shift()?.()
    },
    20,
  )
  await watcher.start(sha(first))
  t.teardown(() => watcher.close())

  for (const [i, text] of ['listen: 8081\n', 'listen: 8082\n'].entries()) {
    const changed = nextChange(waiting)
    const version = `..2026_11_23_22_0${i + 1}_00.000000001`
    await mkdir(join(dir, version))
    await writeFile(join(dir, version, 'gateway.yaml'), text)
    await symlink(version, join(dir, '..data_tmp'))
    await rename(join(dir, '..data_tmp'), join(dir, '..data'))
    await changed
    t.equal(changes, i + 1, `update ${i + 1} seen once`)
    watcher.loaded(sha(text))
  }
})

t.test("an editor's write to a temporary file renamed over the config is seen", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'bearward-rename-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'gateway.yaml')
  await writeFile(file, 'listen: 8080\n')
  const waiting: Array<() => void> = []
  const watcher = new ConfigWatcher(file, () => waiting.shift()?.(), 20)
  await watcher.start(sha('listen: 8080\n'))
  t.teardown(() => watcher.close())
  const changed = nextChange(waiting)
  await writeFile(join(dir, '.gateway.yaml.swp'), 'listen: 9090\n')
  await rename(join(dir, '.gateway.yaml.swp'), file)
  await changed
  t.pass('seen')
})

t.test('a file written every 50 ms beside the config does not postpone a reload beyond the bound', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'bearward-busy-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'gateway.yaml')
  await writeFile(file, 'listen: 8080\n')
  const waiting: Array<() => void> = []
  const maxWaitMs = 400
  // A debounce longer than the writer's period: without the bound the wait restarts forever.
  const watcher = new ConfigWatcher(file, () => waiting.shift()?.(), 150, maxWaitMs)
  await watcher.start(sha('listen: 8080\n'))
  t.teardown(() => watcher.close())

  let writing = true
  let writes = 0
  const writer = (async () => {
    while (writing) {
      await writeFile(join(dir, 'access.log'), `line ${writes++}\n`, { flag: 'a' })
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })()
  t.teardown(async () => {
    writing = false
    await writer
  })
  // The writer's events are flowing before the config changes.
  t.ok(await eventually(() => writes >= 5, 5000, 10), 'the sibling file is being written')

  const changed = nextChange(waiting, 4_000)
  const started = performance.now()
  await writeFile(file, 'listen: 8081\n')
  await changed
  const waited = performance.now() - started
  t.ok(writing, 'the sibling file was still being written when the reload came')
  t.ok(waited < maxWaitMs + 1_000, `reloaded ${Math.round(waited)} ms after the change (bound ${maxWaitMs} ms after the first event)`)
  const writesBefore = writes
  // And it goes on: a second change is seen while the writer still runs.
  const again = nextChange(waiting, 4_000)
  watcher.loaded(sha('listen: 8081\n'))
  await writeFile(file, 'listen: 8082\n')
  await again
  t.ok(writes > writesBefore, 'still writing')
})
