/**
 * What bin/bearward says about its config (issue #42, "Logs an operator can
 * act on"): at start the routes it serves, the discovery URL and, on the demo
 * config as `npm start` runs it, a curl that gets a token (run here as
 * printed); at a reload what changed (routes and clients added, removed,
 * changed), and no warning the running config already gave.
 */
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { rename, writeFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import t from 'tap'
import { startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { eventually } from '../helpers/http.js'

const execFileP = promisify(execFile)

/** config/gateway.yaml as `npm start` runs it, on ports of its own (BEARWARD_LISTEN sets `listen`). */
const DEMO = readFileSync('config/gateway.yaml', 'utf8').replace(/^admin_listen: 127\.0\.0\.1:9090/m, 'admin_listen: 127.0.0.1:0')

function entries(bin: RunningBin): Array<Record<string, unknown>> {
  return bin.lines.flatMap((l) => {
    try {
      return [JSON.parse(l) as Record<string, unknown>]
    } catch {
      return []
    }
  })
}

/** How many warning lines so far say `text`. */
function warningsSaying(bin: RunningBin, text: string): number {
  return entries(bin).filter((e) => e.level === 40 && String(e.msg).includes(text)).length
}

/** Replace the config file in one step, as an editor or a ConfigMap update does (the watcher never reads half a file). */
async function replaceFile(file: string, text: string): Promise<void> {
  await writeFile(`${file}.next`, text)
  await rename(`${file}.next`, file)
}

t.test('start-up names the routes, the discovery URL and, on the demo config, a curl that gets a token', async (t) => {
  const cfg = await tempConfig(DEMO)
  const bin = await startBin(cfg.file, { BEARWARD_LISTEN: '127.0.0.1:0' })
  t.teardown(async () => {
    await bin.stop('SIGKILL')
    await cfg.cleanup()
  })
  const routes = await bin.waitForLog((e) => Array.isArray(e.routes))
  t.same(
    routes.routes,
    [
      { name: 'orders', path: '/orders', upstream: 'http://127.0.0.1:3000' },
      { name: 'docs', path: '/docs', upstream: 'http://127.0.0.1:3001', public: true },
    ],
    'the routes, by name, path and upstream',
  )
  t.match(routes.msg, /^routes: orders \/orders -> http:\/\/127\.0\.0\.1:3000, docs \/docs -> http:\/\/127\.0\.0\.1:3001 \(public\)$/)
  const discovery = await bin.waitForLog((e) => typeof e.discovery === 'string')
  t.equal(discovery.discovery, 'http://localhost:8080/.well-known/openid-configuration', 'the discovery URL under public_url')
  const demo = await bin.waitForLog((e) => typeof e.demo_client === 'string')
  t.equal(demo.demo_client, 'demo-service')
  const command = String(demo.msg).replace(/^demo: get a token with /, '')
  t.equal(command, `curl -s -u demo-service:demo-secret -d grant_type=client_credentials -d scope=orders:read ${bin.url}/token`)
  // The line's command, run as printed by a shell.
  const { stdout } = await execFileP('sh', ['-c', command])
  const answer = JSON.parse(stdout) as { access_token?: unknown; token_type?: unknown; scope?: unknown }
  t.equal(typeof answer.access_token, 'string', 'it gets an access token')
  t.equal(answer.scope, 'orders:read')
})

t.test('a config without the demo secrets prints no token command', async (t) => {
  const cfg = await tempConfig(`
listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
public_url: http://gw.test
routes:
  - name: docs
    match: { path: /docs }
    upstream: http://127.0.0.1:3001
    public: true
`)
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop('SIGKILL')
    await cfg.cleanup()
  })
  await bin.waitForLog((e) => Array.isArray(e.routes))
  t.equal(await bin.stop('SIGTERM'), 0)
  t.notOk(
    entries(bin).some((e) => 'demo_client' in e || 'discovery' in e),
    'no demo command, and no discovery URL without an authorization server',
  )
})

t.test('a reload logs what changed and repeats no warning', async (t) => {
  const cfg = await tempConfig(DEMO)
  const bin = await startBin(cfg.file, { BEARWARD_LISTEN: '127.0.0.1:0' })
  t.teardown(async () => {
    await bin.stop('SIGKILL')
    await cfg.cleanup()
  })
  await bin.waitForLog((e) => typeof e.demo_client === 'string')
  const EPHEMERAL = 'no signing keys: an ephemeral key is generated'
  const DEMO_SECRET = 'DEMO'
  t.equal(warningsSaying(bin, EPHEMERAL), 1, 'the start warns about the ephemeral key')
  const demoWarnings = warningsSaying(bin, DEMO_SECRET)
  t.ok(demoWarnings > 0, 'and about the demo secrets')

  // docs goes, reports comes, orders' upstream moves; demo-cli goes, a client comes, demo-service changes.
  const edited = DEMO.replace(
    / {2}- name: docs\n {4}match: \{ path: \/docs \}\n {4}upstream: http:\/\/127\.0\.0\.1:3001\n {4}public: true.*\n/,
    '  - name: reports\n    match: { path: /reports }\n    upstream: http://127.0.0.1:3002\n    scopes: { GET: ["reports:raed"] }\n',
  )
    .replace('upstream: http://127.0.0.1:3000', 'upstream: http://127.0.0.1:3010')
    .replace(/ {4}- client_id: demo-cli\n( {6}.*\n)+/, '')
    .replace('name: Demo back-end service', 'name: Demo back-end service, renamed')
    .replace(
      '  users:\n',
      '    - client_id: reporter\n      type: public\n      redirect_uris: [http://127.0.0.1/callback]\n      grant_types: [authorization_code]\n      scopes: ["orders:read"]\n\n  users:\n',
    )
  t.not(edited, DEMO)
  const linesBefore = bin.lines.length
  await replaceFile(cfg.file, edited)
  const changes = await bin.waitForLog((e) => String(e.msg).startsWith('config changes:') && typeof e.changes === 'object', 15_000)
  t.same(
    changes.changes,
    {
      routes: { added: ['reports'], removed: ['docs'], changed: ['orders'] },
      clients: { added: ['reporter'], removed: ['demo-cli'], changed: ['demo-service'] },
    },
    'routes and clients added, removed and changed, by name',
  )
  t.equal(
    changes.msg,
    'config changes: routes added: reports; routes removed: docs; routes changed: orders; clients added: reporter; clients removed: demo-cli; clients changed: demo-service',
  )
  await bin.waitForLog((e) => e.msg === 'config reloaded' && e.routes === 2)
  t.equal(warningsSaying(bin, EPHEMERAL), 1, 'the ephemeral key is not warned about again')
  t.equal(warningsSaying(bin, DEMO_SECRET), demoWarnings, 'nor the demo secrets')
  t.equal(warningsSaying(bin, '`reports:raed`'), 1, 'the new warning (a scope no client can be granted) is said once')

  // SIGHUP with the file unchanged: a reload that changes nothing and says no warning again.
  const reloads = (): number => entries(bin).filter((e) => e.msg === 'config reloaded').length
  const before = reloads()
  bin.child.kill('SIGHUP')
  t.ok(await eventually(() => reloads() > before, 15_000), 'SIGHUP reloads')
  const last = entries(bin)
    .slice(linesBefore)
    .filter((e) => String(e.msg).startsWith('config changes:'))
    .at(-1)
  t.same(last, { ...last, msg: 'config changes: none to routes or clients', changes: {} }, 'nothing changed')
  t.equal(warningsSaying(bin, '`reports:raed`'), 1, 'the reload repeats no warning')
  t.equal(warningsSaying(bin, EPHEMERAL), 1)
  t.equal(bin.lines.slice(linesBefore).filter((l) => l.includes('"routes":[')).length, 0, 'a reload does not repeat the start-up lines')
})
