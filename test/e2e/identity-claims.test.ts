/**
 * A person's claims from sign-in to the upstream, through `bin/bearward`:
 * `authorization_server.access_token.claims` puts alice's email and groups
 * into her access token (a JWT, or an opaque token's record), and
 * `gateway.identity_headers.claims` hands them to the upstream as
 * X-Auth-Email and X-Auth-Groups; a client's own copies never get through,
 * and a service's token (no person) sends none.
 */
import t from 'tap'
import { ALICE_CLAIMS, asConfig, demoUser } from '../helpers/as-config.js'
import { startBinOrCleanUp, tempConfig } from '../helpers/bin.js'
import { freePort } from '../helpers/http.js'
import { aliceTokens, serviceToken } from '../helpers/store-pair.js'
import { startUpstream } from '../helpers/upstream.js'

t.setTimeout(120_000)

for (const format of ['jwt', 'opaque'] as const) {
  t.test(`${format} access tokens: the claims reach the upstream as headers`, async (t) => {
    const up = await startUpstream('orders')
    const port = await freePort()
    const config = await asConfig({
      port,
      upstream: up.url,
      format,
      override: {
        gateway: { identity_headers: { claims: { email: 'X-Auth-Email', groups: 'X-Auth-Groups' } } },
        authorization_server: { access_token: { claims: ['email', 'groups'] } },
      },
    })
    demoUser(config, 'alice').claims = { ...ALICE_CLAIMS, groups: ['admins', 'ops'] }
    const cfg = await tempConfig(config)
    const bin = await startBinOrCleanUp(cfg.file, async () => {
      await up.close()
      await cfg.cleanup()
    })
    t.teardown(async () => {
      await bin.stop()
      await up.close()
      await cfg.cleanup()
    })

    const token = (await aliceTokens(bin, 'openid email orders:read')).access_token
    t.equal(token.split('.').length, format === 'jwt' ? 3 : 1, `a ${format} token`)
    const call = (tok: string, extra: Record<string, string> = {}): Promise<Response> =>
      fetch(`${bin.url}/orders/1`, { headers: { authorization: `Bearer ${tok}`, ...extra }, signal: AbortSignal.timeout(10_000) })

    let res = await call(token, { 'x-auth-email': 'mallory@evil.example', 'x-auth-groups': 'root' })
    t.equal(res.status, 200)
    let seen = up.seen.at(-1)?.headers
    t.equal(seen?.['x-auth-email'], 'alice@example.com', "the token's email, not the client's")
    t.equal(seen?.['x-auth-groups'], 'admins, ops')
    t.equal(seen?.['x-auth-subject'], 'alice')

    const before = up.seen.length
    res = await call(await serviceToken(bin), { 'x-auth-email': 'mallory@evil.example' })
    t.equal(res.status, 200)
    t.equal(up.seen.length, before + 1)
    seen = up.seen.at(-1)?.headers
    t.equal(seen?.['x-auth-email'], undefined, "a service's token has no email, and the client's copy is stripped")
    t.equal(seen?.['x-auth-groups'], undefined)
    t.equal(seen?.['x-auth-subject'], 'service')
  })
}
