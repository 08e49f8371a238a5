// JWT route, 1,000 distinct valid tokens reused round-robin (the verified-token
// cache is warm). Every target gets the same request stream, tokens included.
// Targets for bearward: ≥ 0.85 × bare undici, ≥ 4 × the express peer, and p99
// added over bare < 1 ms; against the fastest peers here, when installed:
// ≥ 1.2 × HAProxy verifying every JWT (jwt_verify, one thread) and ≥ 0.9 ×
// nginx proxying without a check (one worker). bearward at log level info is
// measured too, to show what the per-request access log costs, and, when the
// build has the `workers` key, bearward with `workers: 2` (on a Redis store,
// which more than one worker needs; this route reads no store per request).
import { createPublicKey } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { SCOPE, gatewayConfig, route, writeJson } from '../lib/gateway-config.mjs'
import { checkRefusals, findPeer, startHaproxyJwt, startNginx } from '../lib/native-peers.mjs'
import { startRedis } from '../lib/redis.mjs'
import { checkWithJose, generateSigningJwk, mintJwts, publicJwk, writeLines } from '../lib/tokens.mjs'
import { notRun, pairedP99Added, pairedRatio, row } from '../lib/rows.mjs'

const TARGET = '≥ 0.85 × bare, ≥ 4 × express peer, p99 added < 1 ms'
const PEER_TARGET = '≥ 1.2 × HAProxy jwt_verify, ≥ 0.9 × nginx proxying'

const PATH = '/api/items'
const TOKENS = 1000
const log = (msg) => process.stderr.write(`[jwt-warm] ${msg}\n`)

/** Why this build cannot run `workers: 2`, or null (the key is in its JSON Schema). */
function workersUnavailable() {
  const schema = JSON.parse(readFileSync(join(ROOT, 'config/gateway.schema.json'), 'utf8'))
  return schema.properties?.workers ? null : 'this build has no `workers` config key'
}

/** A token like `good` with one character of its signature changed. */
function forged(good) {
  const [h, p, sig] = good.split('.')
  const mid = sig.length >> 1
  return `${h}.${p}.${sig.slice(0, mid)}${sig[mid] === 'A' ? 'B' : 'A'}${sig.slice(mid + 1)}`
}

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

    // HAProxy refuses what bearward refuses before it is measured: a peer that
    // let a bad token through would be measured doing less.
    const haproxyBin = findPeer('haproxy')
    let haproxy = null
    if (haproxyBin.skip) log(`HAProxy skipped: ${haproxyBin.skip}`)
    else {
      const pem = ctx.file('jwt-warm.pub.pem')
      writeFileSync(pem, createPublicKey({ key: publicJwk(jwk), format: 'jwk' }).export({ type: 'spki', format: 'pem' }))
      haproxy = await startHaproxyJwt(ctx, {
        path: haproxyBin.path,
        upstreamUrl: up.url,
        publicKeyPem: pem,
        issuer: publicUrl,
        audience: publicUrl,
        scope: SCOPE,
      })
      const mint = (claims) => mintJwts({ privateJwk: jwk, issuer: publicUrl, audience: publicUrl, scope: SCOPE, count: 1, ...claims })[0]
      await checkRefusals(haproxy.url + PATH, tokens[0], [
        { what: 'no token', token: null, status: 401 },
        { what: 'a forged signature', token: forged(tokens[0]), status: 401 },
        { what: 'an expired token', token: mint({ ttlSec: -60 }), status: 401 },
        { what: 'another issuer', token: mint({ issuer: 'https://issuer.invalid' }), status: 401 },
        { what: 'another audience', token: mint({ audience: 'https://audience.invalid' }), status: 401 },
        { what: 'a token without the scope', token: mint({ scope: `${SCOPE}x other` }), status: 403 },
      ])
      log(`${haproxyBin.version}: refuses a missing, forged, expired, foreign-issuer, foreign-audience and under-scoped token`)
    }
    const nginxBin = findPeer('nginx')
    let nginx = null
    if (nginxBin.skip) log(`nginx skipped: ${nginxBin.skip}`)
    else nginx = await startNginx(ctx, { path: nginxBin.path, upstreamUrl: up.url })

    // bearward sits between the bare proxy and nginx in each round (its ratios
    // are per round, so its tightest comparisons run back to back with it).
    const targets = [ctx.loadTarget({ id: 'express', label: 'express peer', url: express.url + PATH, server: express, rotate })]
    if (haproxy) targets.push(ctx.loadTarget({ id: 'haproxy', label: 'HAProxy jwt_verify', url: haproxy.url + PATH, server: haproxy, rotate }))
    targets.push(ctx.loadTarget({ id: 'bare', label: 'bare undici proxy', url: bare.url + PATH, server: bare, rotate }))
    const unavailable = bearwardUnavailable()
    const noWorkers = unavailable ?? workersUnavailable()
    if (!unavailable) {
      const routes = [route('api', '/api', up.url, { token: 'jwt', scopes: { GET: [SCOPE] } })]
      const config = await gatewayConfig({ publicUrl, keyFile, routes })
      const bw = ctx.track(await startBearward(ctx, { name: 'bearward-jwt', port, config }))
      targets.push(ctx.loadTarget({ id: 'bearward', label: 'bearward JWT route', url: bw.url + PATH, server: bw, rotate }))
      if (nginx) targets.push(ctx.loadTarget({ id: 'nginx', label: 'nginx proxy', url: nginx.url + PATH, server: nginx, rotate }))
      if (!noWorkers) {
        // Same route, two worker processes on one port; the CPU figure sums the primary and its workers.
        const redis = ctx.track(await startRedis(ctx.workDir, 'redis-jwt-workers'))
        const w2 = await reserveAddress()
        const w2Config = { ...(await gatewayConfig({ publicUrl, keyFile, routes, store: redis.url })), workers: 2 }
        const w2Bw = ctx.track(await startBearward(ctx, { name: 'bearward-jwt-workers2', port: w2.port, config: w2Config }))
        targets.push(
          ctx.loadTarget({ id: 'workers2', label: 'bearward JWT route, workers: 2', url: w2Bw.url + PATH, server: w2Bw, withChildren: true, rotate }),
        )
      } else log(`bearward workers: 2 not run: ${noWorkers}`)
      // A second instance at log level info, on its own port (the token's aud/iss stay the first one's public_url).
      const info = await reserveAddress()
      const infoBw = ctx.track(await startBearward(ctx, { name: 'bearward-jwt-info', port: info.port, config, logLevel: 'info' }))
      targets.push(ctx.loadTarget({ id: 'bearwardInfo', label: 'bearward JWT route, log info', url: infoBw.url + PATH, server: infoBw, rotate }))
    } else if (nginx) targets.push(ctx.loadTarget({ id: 'nginx', label: 'nginx proxy', url: nginx.url + PATH, server: nginx, rotate }))
    return {
      targets,
      evaluate(a) {
        const rows = [
          row(a.bare, { subject: 'bare undici proxy (baseline)' }),
          row(a.express, { subject: 'express + express-oauth2-jwt-bearer + hpm (peer)', ratio: pairedRatio(a.express, a.bare, 'bare').text }),
        ]
        rows.push(
          a.haproxy
            ? row(a.haproxy, {
                subject: 'HAProxy 1 thread, jwt_verify ES256 + iss, aud, exp, scope (peer)',
                ratio: pairedRatio(a.haproxy, a.bare, 'bare').text,
              })
            : notRun('HAProxy jwt_verify (peer)', '', haproxyBin.skip),
          a.nginx
            ? row(a.nginx, { subject: 'nginx 1 worker, plain proxy, no check (peer)', ratio: pairedRatio(a.nginx, a.bare, 'bare').text })
            : notRun('nginx proxy (peer)', '', nginxBin.skip),
        )
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
        if (a.haproxy || a.nginx) {
          const vsHaproxy = a.haproxy ? pairedRatio(a.bearward, a.haproxy, 'HAProxy') : null
          const vsNginx = a.nginx ? pairedRatio(a.bearward, a.nginx, 'nginx') : null
          const checks = []
          if (vsHaproxy) checks.push({ ok: vsHaproxy.value >= 1.2, what: '≥ 1.2 × HAProxy' })
          if (vsNginx) checks.push({ ok: vsNginx.value >= 0.9, what: '≥ 0.9 × nginx' })
          const missing = [a.haproxy ? null : 'HAProxy not run', a.nginx ? null : 'nginx not run'].filter(Boolean)
          const ratio = [vsHaproxy?.text, vsNginx?.text, ...missing].filter(Boolean).join('; ')
          rows.push(row(a.bearward, { subject: 'bearward, against the native peers', target: PEER_TARGET, ratio, checks }))
        } else rows.push(notRun('bearward, against the native peers', PEER_TARGET, `${haproxyBin.skip}; ${nginxBin.skip}`))
        if (a.workers2) {
          const vsOne = pairedRatio(a.workers2, a.bearward, 'workers: 1')
          const vsNginx = a.nginx ? `; ${pairedRatio(a.workers2, a.nginx, 'nginx').text}` : ''
          rows.push(row(a.workers2, { subject: 'bearward, workers: 2 (Redis store; CPU summed over the processes)', ratio: `${vsOne.text}${vsNginx}` }))
        } else rows.push(notRun('bearward, workers: 2', '', noWorkers))
        const infoCost = pairedRatio(a.bearwardInfo, a.bearward, 'bearward at warn')
        // Issue #34: the access log is on in production; its cost must stay small.
        rows.push(
          row(a.bearwardInfo, {
            subject: 'bearward, log level info (access log cost)',
            target: '≥ 0.95 × at warn',
            ratio: infoCost.text,
            checks: [{ ok: infoCost.value != null && infoCost.value >= 0.95, what: '≥ 0.95 × at warn' }],
          }),
        )
        return rows
      },
    }
  },
}
