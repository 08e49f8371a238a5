import t from 'tap'
import { writeFile, mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { App } from '../../src/app.js'
import { startUpstream } from '../helpers/upstream.js'
import { asConfigYaml, DEMO_SECRET } from '../helpers/as-config.js'

t.test('app with gateway', async (t) => {
  const up = await startUpstream('orders')
  const dir = await mkdtemp(join(tmpdir(), 'bw-'))
  const file = join(dir, 'g.yaml')
  const yaml = (await asConfigYaml({ port: 0, upstream: up.url })).replace('log: { level: info }', 'log: { level: silent }')
  await writeFile(file, yaml)
  const app = await App.start({ configPath: file, watch: false })
  t.teardown(async () => { await app.close(); await up.close() })
  const base = app.addresses().listen
  const tok = await fetch(`${base}/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Basic ' + Buffer.from(`service:${DEMO_SECRET}`).toString('base64') }, body: 'grant_type=client_credentials&scope=orders:read' })
  const body = await tok.json() as any
  t.equal(tok.status, 200, JSON.stringify(body))
  const res = await fetch(`${base}/orders/1`, { headers: { authorization: `Bearer ${body.access_token}` } })
  t.equal(res.status, 200, await res.text())
  const res2 = await fetch(`${base}/orders/1`)
  t.equal(res2.status, 401)
  t.equal(res2.headers.get('www-authenticate'), 'Bearer realm="bearward"')
  const res3 = await fetch(`${base}/orders/1`, { method: 'POST', headers: { authorization: `Bearer ${body.access_token}` } })
  t.equal(res3.status, 403)
  console.log(res3.headers.get('www-authenticate'))
})
