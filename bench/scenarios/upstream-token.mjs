// The upstream token modes (issue #31, docs/agents.md): the JWT route of
// jwt-warm (1,000 distinct valid tokens reused round-robin, the verified-token
// cache warm) three ways in one bearward: `passthrough` (identity headers, the
// baseline), `upstream_token: exchange` (a token minted per client token and
// minute, then served from its cache) and `upstream_token: assertion` (an
// assertion signed per request, on the thread pool).
// Target: exchange ≥ 0.8 × the passthrough route. The assertion route's ratio
// is reported (it signs on every request; no target).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { SCOPE, gatewayConfig, route, writeJson } from '../lib/gateway-config.mjs'
import { checkWithJose, generateSigningJwk, mintJwts, writeLines } from '../lib/tokens.mjs'
import { notRun, pairedRatio, row } from '../lib/rows.mjs'

const TARGET = '≥ 0.8 × the passthrough JWT route'
const TOKENS = 1000

/** Why this build cannot run the scenario (no `upstream_token` route key in its JSON Schema), or null. */
function modesUnavailable() {
  const schema = JSON.parse(readFileSync(join(ROOT, 'config/gateway.schema.json'), 'utf8'))
  return schema.$defs?.route?.properties?.upstream_token ? null : 'this build has no `upstream_token` route key'
}

export default {
  title: 'JWT route, upstream token modes, 1,000 tokens reused',
  target: TARGET,
  async setup(ctx) {
    const up = await ctx.upstream()
    const { port, publicUrl } = await reserveAddress()
    const jwk = await generateSigningJwk()
    const keyFile = writeJson(ctx.file('upstream-token.jwk'), jwk)
    const tokens = mintJwts({ privateJwk: jwk, issuer: publicUrl, audience: publicUrl, scope: SCOPE, count: TOKENS })
    await checkWithJose(tokens[0], jwk, publicUrl, publicUrl)
    const rotate = { file: writeLines(ctx.file('upstream-token.tokens'), tokens), as: 'bearer', prebuilt: true }

    const unavailable = bearwardUnavailable() ?? modesUnavailable()
    if (unavailable) return { targets: [], evaluate: () => [notRun('bearward upstream_token: exchange', TARGET, unavailable)] }
    // One process, three routes to one upstream: the rounds compare the modes, not two processes.
    const scopes = { GET: [SCOPE] }
    const routes = [
      route('passthrough', '/api', up.url, { token: 'jwt', scopes }),
      route('exchange', '/exchange', up.url, { token: 'jwt', scopes, upstream_token: 'exchange' }),
      route('assertion', '/assertion', up.url, { token: 'jwt', scopes, upstream_token: 'assertion' }),
    ]
    const config = await gatewayConfig({ publicUrl, keyFile, routes })
    const bw = ctx.track(await startBearward(ctx, { name: 'bearward-upstream-token', port, config }))
    const targets = [
      ctx.loadTarget({ id: 'passthrough', label: 'bearward JWT route, passthrough', url: `${bw.url}/api/items`, server: bw, rotate }),
      ctx.loadTarget({ id: 'exchange', label: 'bearward JWT route, upstream_token: exchange', url: `${bw.url}/exchange/items`, server: bw, rotate }),
      ctx.loadTarget({ id: 'assertion', label: 'bearward JWT route, upstream_token: assertion', url: `${bw.url}/assertion/items`, server: bw, rotate }),
    ]
    return {
      targets,
      evaluate(a) {
        const exchange = pairedRatio(a.exchange, a.passthrough, 'passthrough')
        const assertion = pairedRatio(a.assertion, a.passthrough, 'passthrough')
        return [
          row(a.passthrough, { subject: 'bearward JWT route, passthrough (baseline)' }),
          row(a.exchange, {
            subject: 'bearward, upstream_token: exchange (cached minted token)',
            target: TARGET,
            ratio: exchange.text,
            checks: [{ ok: exchange.value >= 0.8, what: '≥ 0.8 × passthrough' }],
          }),
          row(a.assertion, { subject: 'bearward, upstream_token: assertion (ES256 per request)', ratio: assertion.text }),
        ]
      },
    }
  },
}
