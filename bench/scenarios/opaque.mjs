// Opaque-token route: the AS issues opaque access tokens (kept hashed in
// Redis), the route accepts them with `token: introspect` against its own
// store. 1,000 tokens from POST /token (client_credentials), reused
// round-robin; the bare proxy gets the same request stream.
// Target: ≥ 0.80 × bare undici.
import { bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { SCOPE, basic, gatewayConfig, route, writeJson } from '../lib/gateway-config.mjs'
import { startRedis } from '../lib/redis.mjs'
import { generateSigningJwk, writeLines } from '../lib/tokens.mjs'
import { pool, postToken } from '../lib/token-endpoint.mjs'
import { notRun, pairedRatio, row } from '../lib/rows.mjs'

const TARGET = '≥ 0.80 × bare undici'

const PATH = '/api/items'
const TOKENS = 1000

export default {
  title: 'opaque-token route (Redis store), tokens reused',
  target: TARGET,
  async setup(ctx) {
    const up = await ctx.upstream()
    const bare = await ctx.baseline('bare-undici-proxy.mjs', [up.url])
    const unavailable = bearwardUnavailable()
    if (unavailable) {
      const targets = [
        ctx.loadTarget({
          id: 'bare',
          label: 'bare undici proxy',
          url: bare.url + PATH,
          server: bare,
          headers: { authorization: 'Bearer not-a-real-token-but-the-same-size-000000' },
        }),
      ]
      return { targets, evaluate: (a) => [row(a.bare, { subject: 'bare undici proxy (baseline)' }), notRun('bearward', TARGET, unavailable)] }
    }
    const redis = ctx.track(await startRedis(ctx.workDir, 'redis-opaque'))
    const { port, publicUrl } = await reserveAddress()
    const keyFile = writeJson(ctx.file('opaque.jwk'), await generateSigningJwk())
    const config = await gatewayConfig({
      publicUrl,
      keyFile,
      store: redis.url,
      accessFormat: 'opaque',
      routes: [route('api', '/api', up.url, { token: 'introspect', scopes: { GET: [SCOPE] } })],
    })
    const bw = ctx.track(await startBearward(ctx, { name: 'bearward-opaque', port, config }))
    const body = `grant_type=client_credentials&scope=${encodeURIComponent(SCOPE)}`
    const tokens = await pool(TOKENS, 16, async () => (await postToken(`${bw.url}/token`, body, basic())).access_token)
    if (tokens.some((t) => t.split('.').length === 3)) throw new Error('/token issued a JWT although access_token.format is opaque')
    const rotate = { file: writeLines(ctx.file('opaque.tokens'), tokens), as: 'bearer', prebuilt: true }
    return {
      targets: [
        ctx.loadTarget({ id: 'bare', label: 'bare undici proxy', url: bare.url + PATH, server: bare, rotate }),
        ctx.loadTarget({ id: 'bearward', label: 'bearward opaque route', url: bw.url + PATH, server: bw, rotate }),
      ],
      evaluate(a) {
        const r = pairedRatio(a.bearward, a.bare, 'bare')
        return [
          row(a.bare, { subject: 'bare undici proxy (baseline)' }),
          row(a.bearward, { subject: 'bearward', target: TARGET, ratio: r.text, checks: [{ ok: r.value >= 0.8, what: '≥ 0.80 × bare' }] }),
        ]
      },
    }
  },
}
