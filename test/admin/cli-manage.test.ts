/**
 * `bearward admin clients create|update|disable|enable|delete|rotate-secret`
 * and `bearward admin people …` through bin/bearward against a running
 * server: what the shell prints, and that the server did it (a token from
 * the new client, the old secret refused once its overlap is over, a
 * disabled client refused at /token).
 */
import t from 'tap'
import { accessTokenOf, adminConfig, personToken } from '../helpers/admin-api.js'
import { DEMO_SECRET } from '../helpers/as-config.js'
import { runCli, startBin, tempConfig } from '../helpers/bin.js'
import { basic } from '../helpers/client-auth.js'
import { freePort } from '../helpers/http.js'
import { form } from '../helpers/store-pair.js'
import { startUpstream } from '../helpers/upstream.js'

t.test('bearward admin manages clients and people', async (t) => {
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
  const cli = (...args: string[]) => runCli(['admin', ...args], undefined, env)
  const json = async (...args: string[]) => {
    const r = await cli(...args, '--output', 'json')
    if (r.code !== 0) throw new Error(`${args.join(' ')}: ${r.code} ${r.stderr}`)
    return JSON.parse(r.stdout) as Record<string, unknown>
  }
  const tokenStatus = async (secret: string) =>
    (await form(`${bin.url}/token`, { grant_type: 'client_credentials', scope: 'orders:read' }, basic('svc', secret))).status

  t.test('clients: create, rotate-secret, update, disable, enable, delete', async (t) => {
    const created = await json('clients', 'create', 'svc', '--grant-type', 'client_credentials', '--scope', 'orders:read', '--name', 'Billing')
    t.match(created, { id: 'svc', source: 'admin', name: 'Billing' })
    const first = String(created.client_secret)
    // Runs that neither change svc nor depend on each other run at once: a CLI run is a process start.
    const [firstWorks, table, yaml, bad] = await Promise.all([
      tokenStatus(first),
      cli('clients', 'list', '--source', 'admin'),
      cli('clients', 'rotate-secret', 'web'),
      cli('clients', 'create', 'x', '--redirect-uri', 'http://evil.example/cb'),
    ])
    t.equal(firstWorks, 200, 'the printed secret works')
    t.match(table.stdout, /^ID\s+SOURCE/)
    t.match(table.stdout, /\nsvc\s+admin\s+confidential\s+client_credentials\s+false/)
    t.equal(yaml.code, 1)
    t.match(yaml.stderr, /409/)
    t.equal(bad.code, 1)
    t.match(bad.stderr, /400/)
    const rotated = await json('clients', 'rotate-secret', 'svc', '--previous-expires-in', '0')
    const second = String(rotated.client_secret)
    t.not(second, first)
    t.equal(await tokenStatus(second), 200, 'the new secret works')
    t.equal(await tokenStatus(first), 401, 'the old one stopped at once (no overlap asked)')
    t.match(await json('clients', 'update', 'svc', '--name', 'Billing v2'), { name: 'Billing v2', revision: 3 })
    t.match(await json('clients', 'disable', 'svc'), { disabled: true })
    t.equal(await tokenStatus(second), 401, 'disabled: refused at /token')
    t.match(await json('clients', 'enable', 'svc'), { disabled: false })
    t.equal(await tokenStatus(second), 200)
    t.equal((await cli('clients', 'delete', 'svc')).code, 0)
    t.equal(await tokenStatus(second), 401, 'deleted: refused')
  })

  t.test('grants list --client without a person', async (t) => {
    accessTokenOf(await personToken(bin.url, { client: 'web', username: 'alice', scope: 'openid orders:read' }))
    const r = await cli('grants', 'list', '--client', 'web', '--output', 'json')
    t.equal(r.code, 0, r.stderr)
    t.match(JSON.parse(r.stdout), [{ person: 'alice', client_id: 'web' }])
  })

  t.test('people: create, list, get, password-link, factors, sign-out, disable, enable, delete', async (t) => {
    t.match(await json('people', 'create', 'carol', '--claims', '{"email":"carol@example.com"}'), { id: 'carol', source: 'admin', has_password: false })
    // Runs that do not depend on each other run at once (a CLI run is a process start): the reads,
    // then alice's factors and sessions beside carol's disable, enable and delete.
    const [list, got, link, factors] = await Promise.all([
      cli('people', 'list'),
      json('people', 'get', 'alice'),
      json('people', 'password-link', 'carol'),
      cli('people', 'factors', 'alice', '--output', 'json'),
    ])
    t.match(list.stdout, /\ncarol\s+admin\s+carol\s+false\s+false/)
    t.match(got, { id: 'alice', source: 'config' })
    t.match(link.url, /\/set-password\?token=/)
    t.same(JSON.parse(factors.stdout), [], 'no factors')
    const alice = async () => {
      t.equal((await cli('people', 'factors', 'alice', '--remove', 'all')).code, 0)
      t.match(await json('people', 'sign-out', 'alice'), { sessions_ended: 1 }, 'her session from the grants subtest')
    }
    const carol = async () => {
      t.match(await json('people', 'disable', 'carol'), { disabled: true })
      t.match(await json('people', 'enable', 'carol'), { disabled: false })
      t.equal((await cli('people', 'delete', 'carol')).code, 0)
      const gone = await cli('people', 'get', 'carol')
      t.equal(gone.code, 1)
      t.match(gone.stderr, /404/)
    }
    await Promise.all([alice(), carol()])
  })
})
