// POST /token, grant_type=client_credentials, HTTP Basic, ES256 JWT access
// tokens: bearward's AS against node-oidc-provider configured alike (same key
// type, same client authentication, JWT access tokens, in-memory storage).
// Target: ≥ 2 × oidc-provider. bearward as deployed, on Redis (own
// redis-server), is measured too: ≥ 3 × oidc-provider (issue #34), with the
// Redis commands each request costs, counted by the server (MONITOR).
import { bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { CLIENT_ID, CLIENT_SECRET, SCOPE, basic, gatewayConfig, writeJson } from '../lib/gateway-config.mjs'
import { generateSigningJwk } from '../lib/tokens.mjs'
import { FORM, assertJwtAccessToken, postToken } from '../lib/token-endpoint.mjs'
import { redisCommandsPerRequest, startRedis } from '../lib/redis.mjs'
import { notRun, pairedRatio, row } from '../lib/rows.mjs'

const TARGET = '≥ 2 × oidc-provider'
const REDIS_TARGET = '≥ 3 × oidc-provider, on Redis'

const BODY = `grant_type=client_credentials&scope=${encodeURIComponent(SCOPE)}`

export default {
  title: 'token endpoint: client_credentials',
  target: TARGET,
  async setup(ctx) {
    const jwk = await generateSigningJwk()
    const keyFile = writeJson(ctx.file('token-cc.jwk'), jwk)
    const audience = 'http://api.bench.test'
    const peer = await ctx.baseline('oidc-provider-peer.mjs', ['http://127.0.0.1/oidc-provider', keyFile, CLIENT_ID, CLIENT_SECRET, audience, SCOPE])
    const headers = { authorization: basic(), 'content-type': FORM }
    // Check the answer is what we mean to measure before measuring it.
    assertJwtAccessToken((await postToken(`${peer.url}/token`, BODY, headers.authorization)).access_token)
    const targets = [ctx.loadTarget({ id: 'peer', label: 'oidc-provider', url: `${peer.url}/token`, server: peer, method: 'POST', headers, body: BODY })]

    const unavailable = bearwardUnavailable()
    if (!unavailable) {
      const { port, publicUrl } = await reserveAddress()
      const config = await gatewayConfig({ publicUrl, keyFile, routes: [] })
      const bw = ctx.track(await startBearward(ctx, { name: 'bearward-token-cc', port, config }))
      assertJwtAccessToken((await postToken(`${bw.url}/token`, BODY, headers.authorization)).access_token)
      targets.push(ctx.loadTarget({ id: 'bearward', label: 'bearward /token', url: `${bw.url}/token`, method: 'POST', headers, body: BODY, server: bw }))
    }
    let redisCommands = null
    if (!unavailable) {
      const redis = ctx.track(await startRedis(ctx.workDir, 'redis-token-cc'))
      const { port, publicUrl } = await reserveAddress()
      const config = await gatewayConfig({ publicUrl, keyFile, routes: [], store: redis.url })
      const bw = ctx.track(await startBearward(ctx, { name: 'bearward-token-cc-redis', port, config }))
      assertJwtAccessToken((await postToken(`${bw.url}/token`, BODY, headers.authorization)).access_token)
      redisCommands = await redisCommandsPerRequest(redis.port, 100, () => postToken(`${bw.url}/token`, BODY, headers.authorization))
      process.stderr.write(`[token-client-credentials] Redis commands per request: ${JSON.stringify(redisCommands)}\n`)
      targets.push(
        ctx.loadTarget({ id: 'bearwardRedis', label: 'bearward /token on Redis', url: `${bw.url}/token`, method: 'POST', headers, body: BODY, server: bw }),
      )
    }
    return {
      targets,
      extra: { redisCommands },
      evaluate(a) {
        const rows = [row(a.peer, { subject: 'node-oidc-provider (peer)' })]
        if (!a.bearward) return [...rows, notRun('bearward', TARGET, unavailable)]
        const r = pairedRatio(a.bearward, a.peer, 'oidc-provider')
        rows.push(row(a.bearward, { subject: 'bearward', target: TARGET, ratio: r.text, checks: [{ ok: r.value >= 2, what: '≥ 2 × oidc-provider' }] }))
        if (a.bearwardRedis) {
          const rr = pairedRatio(a.bearwardRedis, a.peer, 'oidc-provider')
          rows.push(
            row(a.bearwardRedis, {
              subject: 'bearward, Redis store',
              target: REDIS_TARGET,
              ratio: `${rr.text}; ${redisCommands?.perRequest.toFixed(2) ?? '—'} Redis commands per request (${Object.keys(redisCommands?.byCommand ?? {}).join(', ')})`,
              checks: [{ ok: rr.value >= 3, what: '≥ 3 × oidc-provider on Redis' }],
            }),
          )
        }
        return rows
      },
    }
  },
}
