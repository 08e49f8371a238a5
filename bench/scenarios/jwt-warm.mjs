// JWT route, 1,000 distinct valid tokens reused round-robin (the verified-token
// cache is warm). Every target gets the same request stream, tokens included.
// Targets for bearward: ≥ 0.85 × bare undici, ≥ 4 × the express peer, and p99
// added over bare < 1 ms. bearward at log level info is measured too, to show
// what the per-request access log costs.
import { bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { SCOPE, gatewayConfig, route, writeJson } from '../lib/gateway-config.mjs'
import { checkWithJose, generateSigningJwk, mintJwts, publicJwk, writeLines } from '../lib/tokens.mjs'
import { notRun, pairedP99Added, pairedRatio, row } from '../lib/rows.mjs'

const TARGET = '≥ 0.85 × bare, ≥ 4 × express peer, p99 added < 1 ms'

const PATH = '/api/items'
const TOKENS = 1000

export default {
  title: 'JWT route, 1,000 tokens reused',
  target: TARGET,
  async setup(ctx) {
    const up = await ctx.upstream()
    const { port, publicUrl } = await reserveAddress()
    const jwk = await generateSigningJwk()
    const keyFile = writeJson(ctx.file('jwt-warm.jwk'), jwk)
    const pubFile = writeJson(ctx.file('jwt-warm.pub.jwk'), publicJwk(jwk))
    const tokens = mintJwts({ privateJwk: jwk, issuer: publicUrl, audience: publicUrl, scope: SCOPE, count: TOKENS })
    await checkWithJose(tokens[0], jwk, publicUrl, publicUrl)
    const rotate = { file: writeLines(ctx.file('jwt-warm.tokens'), tokens), as: 'bearer', prebuilt: true }

    const bare = await ctx.baseline('bare-undici-proxy.mjs', [up.url])
    const express = await ctx.baseline('express-jwt-peer.mjs', [up.url, publicUrl, publicUrl, pubFile, SCOPE, '/api'])
    // bearward comes right after the bare proxy in each round (its ratios are per round).
    const targets = [
      ctx.loadTarget({ id: 'express', label: 'express peer', url: express.url + PATH, server: express, rotate }),
      ctx.loadTarget({ id: 'bare', label: 'bare undici proxy', url: bare.url + PATH, server: bare, rotate }),
    ]
    const unavailable = bearwardUnavailable()
    if (!unavailable) {
      const config = await gatewayConfig({ publicUrl, keyFile, routes: [route('api', '/api', up.url, { token: 'jwt', scopes: { GET: [SCOPE] } })] })
      const bw = ctx.track(await startBearward(ctx, { name: 'bearward-jwt', port, config }))
      targets.push(ctx.loadTarget({ id: 'bearward', label: 'bearward JWT route', url: bw.url + PATH, server: bw, rotate }))
      // A second instance at log level info, on its own port (the token's aud/iss stay the first one's public_url).
      const info = await reserveAddress()
      const infoBw = ctx.track(await startBearward(ctx, { name: 'bearward-jwt-info', port: info.port, config, logLevel: 'info' }))
      targets.push(ctx.loadTarget({ id: 'bearwardInfo', label: 'bearward JWT route, log info', url: infoBw.url + PATH, server: infoBw, rotate }))
    }
    return {
      targets,
      evaluate(a) {
        const rows = [row(a.bare, { subject: 'bare undici proxy (baseline)' }), row(a.express, { subject: 'express + express-oauth2-jwt-bearer + hpm (peer)', ratio: pairedRatio(a.express, a.bare, 'bare').text })]
        if (!a.bearward) return [...rows, notRun('bearward', TARGET, unavailable)]
        const vsBare = pairedRatio(a.bearward, a.bare, 'bare')
        const vsExpress = pairedRatio(a.bearward, a.express, 'express')
        const added = pairedP99Added(a.bearward, a.bare)
        rows.push(
          row(a.bearward, {
            subject: 'bearward',
            target: TARGET,
            ratio: `${vsBare.text}; ${vsExpress.text}; p99 +${added?.toFixed(2) ?? '—'} ms`,
            checks: [
              { ok: vsBare.value >= 0.85, what: '≥ 0.85 × bare' },
              { ok: vsExpress.value >= 4, what: '≥ 4 × express' },
              { ok: added != null && added < 1, what: 'p99 added < 1 ms' },
            ],
          }),
        )
        const infoCost = pairedRatio(a.bearwardInfo, a.bearward, 'bearward at warn')
        rows.push(row(a.bearwardInfo, { subject: 'bearward, log level info (access log cost)', ratio: infoCost.text }))
        return rows
      },
    }
  },
}
