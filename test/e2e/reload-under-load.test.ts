import t from 'tap'
import { writeFile, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { Agent, request } from 'undici'
import { startBin, tempConfig, eventually } from '../helpers/bin.js'
import { startUpstream } from '../helpers/upstream.js'
import { freePort } from '../helpers/browser.js'
import { asConfigYaml, DEMO_SECRET } from '../helpers/as-config.js'
import { generatePrivateJwk } from '../../src/keys/keyset.js'

const publicRoute = (name: string, path: string, upstream: string): string => `
  - name: ${name}
    match: { path: ${path} }
    upstream: ${upstream}
    public: true
`

/**
 * Hot reload swaps the whole runtime while requests are in flight: under a
 * steady load, a route added by reload is served, a removed one is gone,
 * and no request on a route that stays fails.
 */
t.test('routes added and removed by hot reload under continuous load, zero failed requests', async (t) => {
  const up = await startUpstream('steady')
  const cfg = await tempConfig('')
  const write = async (routes: string): Promise<void> => {
    const tmp = join(cfg.dir, '.next.yaml')
    await writeFile(tmp, `listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nroutes:\n${routes}`)
    await rename(tmp, cfg.file)
  }
  await write(publicRoute('steady', '/steady', up.url) + publicRoute('old', '/old', up.url))
  const bin = await startBin(cfg.file)
  const agent = new Agent({ connections: 16 })
  t.teardown(async () => {
    await bin.stop()
    await agent.close()
    await up.close()
    await cfg.cleanup()
  })

  let stop = false
  let sent = 0
  const failures: string[] = []
  const worker = async (): Promise<void> => {
    while (!stop) {
      try {
        const res = await request(`${bin.url}/steady/x`, { dispatcher: agent })
        await res.body.text()
        sent++
        if (res.statusCode !== 200) failures.push(String(res.statusCode))
      } catch (err) {
        failures.push((err as Error).message)
      }
    }
  }
  const workers = Array.from({ length: 8 }, () => worker())

  await new Promise((r) => setTimeout(r, 200))
  await write(publicRoute('steady', '/steady', up.url) + publicRoute('old', '/old', up.url) + publicRoute('new', '/new', up.url))
  t.ok(await eventually(async () => (await fetch(`${bin.url}/new/1`)).status === 200), 'the added route is served')
  await write(publicRoute('steady', '/steady', up.url) + publicRoute('new', '/new', up.url))
  t.ok(await eventually(async () => (await fetch(`${bin.url}/old/1`)).status === 404), 'the removed route is gone')
  for (let i = 0; i < 5; i++) {
    await write(publicRoute('steady', '/steady', up.url) + publicRoute(`r${i}`, `/r${i}`, up.url))
    await new Promise((r) => setTimeout(r, 100))
  }
  stop = true
  await Promise.all(workers)
  t.ok(sent > 200, `requests were in flight during the reloads (${sent})`)
  t.same(failures, [], 'no request on the steady route failed')
  t.ok(await eventually(async () => (await fetch(`${bin.url}/r4/1`)).status === 200), 'the last of the quick successive writes is what serves')
  t.equal((await fetch(`${bin.url}/r0/1`)).status, 404)
  const metrics = await (await fetch(`${bin.admin}/metrics`)).text()
  t.match(metrics, /bearward_config_reloads_total\{result="ok"\} [3-9]/, 'reloads were applied (quick successive writes may coalesce)')
  t.notMatch(metrics, /result="error"/, 'none refused')
})

t.test('adding a signing key and reloading rotates without failing tokens signed by the old key', async (t) => {
  const up = await startUpstream('orders')
  const port = await freePort()
  const cfg = await tempConfig('')
  const oldKey = join(cfg.dir, 'old.jwk')
  const newKey = join(cfg.dir, 'new.jwk')
  await writeFile(oldKey, JSON.stringify(await generatePrivateJwk('ES256', 'old')))
  await writeFile(newKey, JSON.stringify(await generatePrivateJwk('ES256', 'new')))
  const base = await asConfigYaml({ port, upstream: up.url })
  const withKeys = (files: string[]): string =>
    base.replace('authorization_server:\n', `authorization_server:\n  keys: [${files.map((f) => `{ file: ${f} }`).join(', ')}]\n`)
  await writeFile(cfg.file, withKeys([oldKey]))
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const issue = async (): Promise<string> => {
    const res = await fetch(`${bin.url}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`service:${DEMO_SECRET}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&scope=orders%3Aread',
    })
    return ((await res.json()) as { access_token: string }).access_token
  }
  const kid = (token: string): string => (JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString()) as { kid: string }).kid
  const call = (token: string): Promise<Response> => fetch(`${bin.url}/orders/1`, { headers: { authorization: `Bearer ${token}` } })

  const before = await issue()
  t.equal(kid(before), 'old')
  await writeFile(cfg.file, withKeys([newKey, oldKey]))
  t.ok(await eventually(async () => kid(await issue()) === 'new'), 'the new first key signs after reload')
  const jwks = (await (await fetch(`${bin.url}/jwks.json`)).json()) as { keys: Array<{ kid: string }> }
  t.same(jwks.keys.map((k) => k.kid), ['new', 'old'], 'both keys are published')
  t.equal((await call(before)).status, 200, 'a token signed by the old key still works')
  t.equal((await call(await issue())).status, 200, 'a token signed by the new key works')

  await writeFile(cfg.file, withKeys([newKey]))
  t.ok(await eventually(async () => (await call(before)).status === 401), 'retiring the old key retires its tokens')
})
