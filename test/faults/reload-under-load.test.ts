import t from 'tap'
import { createServer } from 'node:http'
import { writeFile, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Agent, request } from 'undici'
import { startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { startUpstream } from '../helpers/upstream.js'
import { asConfig, DEMO_SECRET } from '../helpers/as-config.js'
import { configYaml, mergeConfig } from '../helpers/config-tree.js'
import { selfSignedCert } from '../helpers/tls.js'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { eventually, freePort, listen } from '../helpers/http.js'
import { basic } from '../helpers/client-auth.js'

// Real binaries under load on a 2-core machine shared with the rest of the
// suite: more than tap's default per-file timeout. Each step has its own bound.
t.setTimeout(300_000)

const publicRoute = (name: string, path: string, upstream: string): string => `
  - name: ${name}
    match: { path: ${path} }
    upstream: ${upstream}
    public: true
`

/** Parsed log lines printed after `mark` (an index into bin.lines). */
function logsSince(bin: RunningBin, mark: number): Array<Record<string, unknown>> {
  return bin.lines.slice(mark).flatMap((line) => {
    try {
      return [JSON.parse(line) as Record<string, unknown>]
    } catch {
      return []
    }
  })
}

/** Poll until a log line after `mark` satisfies `pred`; resolves to it. */
async function logAfter(bin: RunningBin, mark: number, pred: (e: Record<string, unknown>) => boolean, ms = 15_000): Promise<Record<string, unknown>> {
  let found: Record<string, unknown> | undefined
  const seen = await eventually(async () => (found = logsSince(bin, mark).find(pred)) !== undefined, ms, 10)
  if (!seen || found === undefined) throw new Error(`log line not seen within ${ms} ms`)
  return found
}

/**
 * A reload is all or nothing (issue 16, item 3), under a steady HTTPS load:
 * a config that is valid but fails late (after the new issuer's JWKS client
 * and introspection pool were built, its TLS certificate turns out not to be
 * PEM) is refused with zero failed requests, and the refused build fetched
 * nothing; the corrected file applies; `revocation_resync` is applied and
 * logged; a key that needs a restart is named in a warning.
 */
t.test('a reload that fails late changes nothing; a good one applies; restart-only keys are named', async (t) => {
  const up = await startUpstream('steady')
  const cfg = await tempConfig('')
  const cert = selfSignedCert(cfg.dir, 'server')
  const garbage = join(cfg.dir, 'not-a-cert.pem')
  await writeFile(garbage, 'this is not PEM\n')
  const jwksHits: string[] = []
  const jwks = createServer((req, res) => {
    jwksHits.push(req.url ?? '')
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{"keys":[]}')
  })
  const { url: jwksUrl } = await listen(jwks)
  const adminPort = await freePort()
  const write = async (o: { certFile: string; corp: boolean; resync?: string; adminPort?: number }): Promise<void> => {
    const corp = o.corp
      ? `issuers:
  - id: corp
    issuer: https://corp.example
    jwks_uri: ${jwksUrl}/corp.json
    introspection: { endpoint: ${jwksUrl}/introspect, client_id: gw, client_secret: s3cret }
`
      : ''
    const corpRoute = o.corp
      ? `  - name: corp-orders
    match: { path: /corp-orders }
    upstream: ${up.url}
    token: any
    issuers: [corp]
`
      : ''
    const tmp = join(cfg.dir, '.next.yaml')
    await writeFile(
      tmp,
      `listen: 127.0.0.1:0
admin_listen: 127.0.0.1:${o.adminPort ?? adminPort}
tls: { cert_file: ${o.certFile}, key_file: ${cert.keyFile} }
${o.resync ? `gateway: { revocation_resync: ${o.resync} }\n` : ''}${corp}routes:
  - name: steady
    match: { path: /steady }
    upstream: ${up.url}
    public: true
${corpRoute}`,
    )
    await rename(tmp, cfg.file)
  }
  await write({ certFile: cert.certFile, corp: false })
  const bin = await startBin(cfg.file, {}, 30_000)
  const agent = new Agent({ connections: 8, connect: { ca: cert.cert, servername: 'localhost' } })
  t.teardown(async () => {
    await bin.stop()
    await agent.close()
    await up.close()
    await new Promise<void>((resolve) => jwks.close(() => resolve()))
    await cfg.cleanup()
  })

  // A bounded steady load over HTTPS for the whole test.
  let stop = false
  let sent = 0
  const failures: string[] = []
  const started = performance.now()
  const worker = async (): Promise<void> => {
    while (!stop && sent < 100_000 && performance.now() - started < 60_000) {
      try {
        const res = await request(`${bin.url}/steady/x`, { dispatcher: agent })
        await res.body.dump()
        sent++
        if (res.statusCode !== 200) failures.push(String(res.statusCode))
      } catch (err) {
        failures.push((err as Error).message)
      }
    }
  }
  const workers = Array.from({ length: 4 }, () => worker())
  t.teardown(async () => {
    stop = true
    await Promise.all(workers)
  })
  await eventually(async () => sent >= 20, 15_000, 10)

  let mark = bin.lines.length
  await write({ certFile: garbage, corp: true })
  const refused = await logAfter(bin, mark, (e) => String(e.msg).startsWith('config reload refused'))
  t.match(String(refused.msg), /still serving the previous config/, 'the late failure refuses the reload')
  const ready = (await (await fetch(`${bin.admin}/readyz`)).json()) as { last_reload_error?: string }
  t.ok(ready.last_reload_error, '/readyz shows the refused reload')
  const sentAtRefusal = sent
  t.ok(await eventually(async () => sent >= sentAtRefusal + 20, 15_000, 10), 'requests keep being answered after the refused reload')
  const missing = await request(`${bin.url}/corp-orders/1`, { dispatcher: agent })
  await missing.body.dump()
  t.equal(missing.statusCode, 404, 'the refused config serves nothing: its route does not exist')
  // The refused build had a JWKS client for corp: before the fix it fetched at once.
  const probe = await fetch(`${jwksUrl}/probe`)
  await probe.text()
  t.same(
    jwksHits.filter((u) => u !== '/probe'),
    [],
    "the refused build fetched nothing from the new issuer's JWKS URI",
  )

  mark = bin.lines.length
  const nextAdmin = await freePort()
  await write({ certFile: cert.certFile, corp: true, resync: '2s', adminPort: nextAdmin })
  await logAfter(bin, mark, (e) => e.msg === 'config reloaded')
  const sentAtApply = sent
  t.ok(await eventually(async () => sent >= sentAtApply + 20, 15_000, 10), 'requests keep being answered after the applied reload')
  const applied = logsSince(bin, mark)
  t.ok(
    applied.some((e) => e.msg === 'config: revocation list settings applied' && e.revocation_resync_sec === 2),
    'revocation_resync is applied, and logged',
  )
  t.ok(
    applied.some((e) => e.level === 40 && e.key === 'admin_listen' && String(e.msg).includes('next restart')),
    'a key that needs a restart is named in a warning',
  )
  t.ok(await eventually(async () => jwksHits.includes('/corp.json'), 5000), 'the applied config fetches the issuer keys')
  const corpRes = await request(`${bin.url}/corp-orders/1`, { dispatcher: agent })
  await corpRes.body.dump()
  t.equal(corpRes.statusCode, 401, 'the new protected route is served (and asks for a token)')
  const adminStill = await fetch(`${bin.admin}/healthz`)
  t.equal(adminStill.status, 200, 'the admin server keeps its address until a restart')

  stop = true
  await Promise.all(workers)
  // What matters is that none failed, not how many the machine managed (the load is paced above by events, not a rate).
  t.same(failures, [], `zero failed requests through the refused and the applied reload (${sent} sent)`)
  const metrics = await (await fetch(`${bin.admin}/metrics`)).text()
  t.match(metrics, /bearward_config_reloads_total\{result="error"\} 1/)
  t.match(metrics, /bearward_config_reloads_total\{result="ok"\} 1/)
})

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
  const bin = await startBin(cfg.file, {}, 30_000)
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

  await eventually(async () => sent >= 20, 15_000, 10)
  await write(publicRoute('steady', '/steady', up.url) + publicRoute('old', '/old', up.url) + publicRoute('new', '/new', up.url))
  t.ok(await eventually(async () => (await fetch(`${bin.url}/new/1`)).status === 200), 'the added route is served')
  await write(publicRoute('steady', '/steady', up.url) + publicRoute('new', '/new', up.url))
  t.ok(await eventually(async () => (await fetch(`${bin.url}/old/1`)).status === 404), 'the removed route is gone')
  for (let i = 0; i < 5; i++) {
    await write(publicRoute('steady', '/steady', up.url) + publicRoute(`r${i}`, `/r${i}`, up.url))
    // Paced by the load, not a clock: the next write comes after a few more requests.
    const before = sent
    t.ok(await eventually(async () => sent >= before + 5, 15_000, 5), `requests keep being answered after write ${i + 1} of 5`)
  }
  stop = true
  await Promise.all(workers)
  t.same(failures, [], `no request on the steady route failed (${sent} sent)`)
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
  const base = await asConfig({ port, upstream: up.url })
  const withKeys = (files: string[]): string => configYaml(mergeConfig(base, { authorization_server: { keys: files.map((file) => ({ file })) } }))
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
      headers: { authorization: basic('service', DEMO_SECRET), 'content-type': 'application/x-www-form-urlencoded' },
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
  t.same(
    jwks.keys.map((k) => k.kid),
    ['new', 'old'],
    'both keys are published',
  )
  t.equal((await call(before)).status, 200, 'a token signed by the old key still works')
  t.equal((await call(await issue())).status, 200, 'a token signed by the new key works')

  await writeFile(cfg.file, withKeys([newKey]))
  t.ok(await eventually(async () => (await call(before)).status === 401), 'retiring the old key retires its tokens')
})
