// A public route (no token): bearward's routing and proxying alone, against
// the bare undici pass-through proxy, with http-proxy and the upstream itself
// as references. Target: ≥ 0.90 × bare undici.
//
// A second, identical bare proxy process is measured too, next to the first:
// how far its ratio to the first strays from 1.00 is how far two processes
// running the same code differ on this machine in this run (the noise floor
// of every ratio in the table).
import { bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { gatewayConfig, route, writeJson } from '../lib/gateway-config.mjs'
import { generateSigningJwk } from '../lib/tokens.mjs'
import { notRun, pairedRatio, row } from '../lib/rows.mjs'

const TARGET = '≥ 0.90 × bare undici'

const PATH = '/public/items'

export default {
  title: 'public route (no token)',
  target: TARGET,
  async setup(ctx) {
    const up = await ctx.upstream()
    const bare = await ctx.baseline('bare-undici-proxy.mjs', [up.url])
    const bareTwin = await ctx.baseline('bare-undici-proxy.mjs', [up.url], 'bare-undici-proxy-twin')
    const hp = await ctx.baseline('http-proxy.mjs', [up.url])
    // The bare proxy sits between its twin and bearward in each round (their ratios are per round).
    const targets = [
      ctx.loadTarget({ id: 'upstream', label: 'upstream direct', url: up.url + PATH, server: up }),
      ctx.loadTarget({ id: 'httpProxy', label: 'http-proxy', url: hp.url + PATH, server: hp }),
      ctx.loadTarget({ id: 'bareTwin', label: 'bare undici proxy, twin', url: bareTwin.url + PATH, server: bareTwin }),
      ctx.loadTarget({ id: 'bare', label: 'bare undici proxy', url: bare.url + PATH, server: bare }),
    ]
    const unavailable = bearwardUnavailable()
    if (!unavailable) {
      const { port, publicUrl } = await reserveAddress()
      const keyFile = writeJson(ctx.file('public-route.jwk'), await generateSigningJwk())
      const config = await gatewayConfig({ publicUrl, keyFile, routes: [route('public', '/public', up.url, { public: true })] })
      const bw = ctx.track(await startBearward(ctx, { name: 'bearward-public', port, config }))
      targets.push(ctx.loadTarget({ id: 'bearward', label: 'bearward public route', url: bw.url + PATH, server: bw }))
    }
    return {
      targets,
      evaluate(a) {
        const vsBare = (x) => pairedRatio(x, a.bare, 'bare undici')
        const rows = [
          row(a.upstream, { subject: 'upstream direct (reference)', ratio: vsBare(a.upstream).text }),
          row(a.bare, { subject: 'bare undici proxy (baseline)' }),
          row(a.bareTwin, { subject: 'the same bare proxy, a second process (noise floor)', ratio: vsBare(a.bareTwin).text }),
          row(a.httpProxy, { subject: 'http-proxy (reference)', ratio: vsBare(a.httpProxy).text }),
        ]
        if (a.bearward) {
          const r = vsBare(a.bearward)
          rows.push(row(a.bearward, { subject: 'bearward', target: TARGET, ratio: r.text, checks: [{ ok: r.value >= 0.9, what: '≥ 0.90 × bare' }] }))
        } else rows.push(notRun('bearward', TARGET, unavailable))
        return rows
      },
    }
  },
}
