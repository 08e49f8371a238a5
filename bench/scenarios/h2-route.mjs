// A public route whose upstream speaks HTTP/2 (`upstream: h2c://...`, issue
// #33) beside the same route to the HTTP/1.1 upstream: what relaying to an
// HTTP/2 upstream through undici's HTTP/2 client costs against its pooled
// HTTP/1.1 connections. Target: ≥ 0.80 × the HTTP/1.1 route.
//
// The load generator (autocannon) speaks HTTP/1.1 only, so clients reach
// bearward over HTTP/1.1 here; the HTTP/2 listen side is covered by the
// tests (test/e2e/http2.test.ts), not measured.
import { join } from 'node:path'
import { bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { gatewayConfig, route, writeJson } from '../lib/gateway-config.mjs'
import { startProcess } from '../lib/spawn.mjs'
import { generateSigningJwk } from '../lib/tokens.mjs'
import { notRun, pairedRatio, row } from '../lib/rows.mjs'

const TARGET = '≥ 0.80 × the HTTP/1.1 route'
const BENCH = new URL('..', import.meta.url).pathname

export default {
  title: 'public route to an HTTP/2 (h2c) upstream',
  target: TARGET,
  async setup(ctx) {
    const up = await ctx.upstream()
    const h2 = ctx.track(await startProcess({ name: 'h2c-upstream', args: [join(BENCH, 'lib/h2c-upstream.mjs')], logDir: ctx.workDir }))
    const targets = []
    const unavailable = bearwardUnavailable()
    if (!unavailable) {
      const { port, publicUrl } = await reserveAddress()
      const keyFile = writeJson(ctx.file('h2-route.jwk'), await generateSigningJwk())
      const config = await gatewayConfig({
        publicUrl,
        keyFile,
        routes: [route('h1', '/h1', up.url, { public: true }), route('h2', '/h2', h2.url.replace(/^http:/, 'h2c:'), { public: true })],
      })
      const bw = ctx.track(await startBearward(ctx, { name: 'bearward-h2-route', port, config }))
      targets.push(ctx.loadTarget({ id: 'h1', label: 'bearward, HTTP/1.1 upstream', url: `${bw.url}/h1/items`, server: bw }))
      targets.push(ctx.loadTarget({ id: 'h2', label: 'bearward, h2c upstream', url: `${bw.url}/h2/items`, server: bw }))
    }
    return {
      targets,
      evaluate(a) {
        if (!a.h1 || !a.h2) return [notRun('bearward h2c upstream', TARGET, unavailable)]
        const r = pairedRatio(a.h2, a.h1, 'HTTP/1.1 route')
        return [
          row(a.h1, { subject: 'bearward, HTTP/1.1 upstream (baseline)' }),
          row(a.h2, { subject: 'bearward, h2c upstream', target: TARGET, ratio: r.text, checks: [{ ok: r.value >= 0.8, what: '≥ 0.80 × HTTP/1.1 route' }] }),
        ]
      },
    }
  },
}
