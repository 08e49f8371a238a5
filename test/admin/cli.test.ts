/**
 * `bearward admin` through bin/bearward against a running server: client
 * credentials from the environment, `--output json|table`, lists followed
 * across pages, a grant revoked from the shell refused at the gateway.
 */
import t from 'tap'
import { DEMO_SECRET } from '../helpers/as-config.js'
import { accessTokenOf, adminConfig, personToken } from '../helpers/admin-api.js'
import { runCli, startBin, tempConfig } from '../helpers/bin.js'
import { freePort, reply } from '../helpers/http.js'
import { startUpstream } from '../helpers/upstream.js'

t.test('bearward admin over the API', async (t) => {
  const up = await startUpstream('orders')
  const port = await freePort()
  const cfg = await tempConfig(await adminConfig({ port, upstream: up.url }))
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const env = {
    BEARWARD_ADMIN_URL: bin.admin,
    BEARWARD_ADMIN_ISSUER: bin.url,
    BEARWARD_ADMIN_CLIENT_ID: 'ops',
    BEARWARD_ADMIN_CLIENT_SECRET: DEMO_SECRET,
  }

  t.test('clients list as json and as a table', async (t) => {
    // The two runs at once: a CLI run is a process start.
    const [json, tableOut] = await Promise.all([
      runCli(['admin', 'clients', 'list', '--output', 'json'], undefined, env),
      runCli(['admin', 'clients', 'list'], undefined, env),
    ])
    t.equal(json.code, 0, json.stderr)
    const clients = JSON.parse(json.stdout) as Array<{ id: string; source: string }>
    t.same(
      clients.map((c) => c.id),
      ['auditor', 'cli', 'console', 'ops', 'service', 'web'],
    )
    t.ok(clients.every((c) => c.source === 'config'))
    t.equal(tableOut.code, 0)
    t.match(tableOut.stdout, /^ID\s+SOURCE\s+TYPE/)
    t.match(tableOut.stdout, /\nweb\s+config\s+confidential/)
  })

  t.test('grants list and revoke from the shell', async (t) => {
    const person = accessTokenOf(await personToken(bin.url, { client: 'web', username: 'alice', scope: 'openid orders:read' }))
    const listed = await runCli(['admin', 'grants', 'list', '--person', 'alice', '--output', 'json'], undefined, env)
    t.equal(listed.code, 0, listed.stderr)
    const grants = JSON.parse(listed.stdout) as Array<{ id: string }>
    t.equal(grants.length, 1)
    const revoked = await runCli(['admin', 'grants', 'revoke', grants[0]?.id ?? ''], undefined, env)
    t.equal(revoked.code, 0, revoked.stderr)
    t.equal((await reply(fetch(`${bin.url}/orders`, { headers: { authorization: `Bearer ${person}` } }))).status, 401)
    const again = await runCli(['admin', 'grants', 'revoke', grants[0]?.id ?? ''], undefined, env)
    t.equal(again.code, 1, 'a grant already revoked is gone')
    t.match(again.stderr, /404/)
  })

  t.test('a read-only token cannot revoke; a wrong secret gets no token; missing settings are named', async (t) => {
    // The three runs at once: a CLI run is a process start, and none changes anything.
    const [read, wrong, missing] = await Promise.all([
      runCli(['admin', 'tokens', 'revoke', 'some-jti'], undefined, { ...env, BEARWARD_ADMIN_SCOPE: 'bearward:admin:read' }),
      runCli(['admin', 'clients', 'list'], undefined, { ...env, BEARWARD_ADMIN_CLIENT_SECRET: 'not-the-secret' }),
      runCli(['admin', 'clients', 'list'], undefined, { ...env, BEARWARD_ADMIN_URL: '' }),
    ])
    t.equal(read.code, 1)
    t.match(read.stderr, /403/)
    t.equal(wrong.code, 1)
    t.match(wrong.stderr, /invalid_client/)
    t.notMatch(wrong.stderr, /not-the-secret/, 'the secret is not echoed')
    t.equal(missing.code, 1)
    t.match(missing.stderr, /BEARWARD_ADMIN_URL/)
  })
})
