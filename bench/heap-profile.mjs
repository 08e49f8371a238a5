// What one request allocates: a sampling heap profile of bearward's JWT route
// that also keeps the objects the garbage collector already took (V8's
// HeapProfiler.startSampling with includeObjectsCollectedByMinorGC/MajorGC),
// so it shows the per-request garbage, not only what stays alive.
//
//   node bench/heap-profile.mjs [--requests N] [--tokens N] [--route jwt|public] [--top N]
//
// bearward (this checkout's dist/, memory store, log level warn, one route)
// runs with the inspector on a loopback port; after a warm-up of N requests the
// sampler runs for N more (autocannon, 50 connections, tokens round-robin) and
// the report prints the bytes allocated per request (sampled total ÷ requests)
// and the allocation sites and areas that account for them. CPU load does not
// change the figures (they count bytes, not time); the warm-up matters (JIT).
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { WebSocket } from 'undici'
import { bearwardUnavailable, reserveAddress, startBearward } from './lib/bearward.mjs'
import { BenchContext } from './lib/context.mjs'
import { SCOPE, gatewayConfig, route, writeJson } from './lib/gateway-config.mjs'
import { runLoad } from './lib/load.mjs'
import { generateSigningJwk, mintJwtsToFile } from './lib/tokens.mjs'

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '50000' },
    tokens: { type: 'string', default: '1000' },
    route: { type: 'string', default: 'jwt' },
    top: { type: 'string', default: '25' },
    interval: { type: 'string', default: '2048' },
  },
})
const requests = Number(values.requests)
const unavailable = bearwardUnavailable()
if (unavailable) throw new Error(unavailable)

/** A Chrome DevTools Protocol session over the inspector's WebSocket. */
async function inspector(url) {
  const ws = new WebSocket(url)
  await new Promise((resolve, reject) => {
    ws.addEventListener('open', resolve, { once: true })
    ws.addEventListener('error', reject, { once: true })
  })
  let id = 0
  const pending = new Map()
  ws.addEventListener('message', (ev) => {
    const msg = JSON.parse(String(ev.data))
    const p = pending.get(msg.id)
    if (p === undefined) return
    pending.delete(msg.id)
    if (msg.error) p.reject(new Error(msg.error.message))
    else p.resolve(msg.result)
  })
  return {
    send: (method, params = {}) =>
      new Promise((resolve, reject) => {
        id += 1
        pending.set(id, { resolve, reject })
        ws.send(JSON.stringify({ id, method, params }))
      }),
    close: () => ws.close(),
  }
}

const ctx = new BenchContext({ quick: true, connections: 50, logLevel: 'warn', cpuProf: false, durationSec: 1, warmupSec: 0 })
try {
  const up = await ctx.upstream()
  const { port, publicUrl } = await reserveAddress()
  const jwk = await generateSigningJwk()
  const keyFile = writeJson(ctx.file('heap.jwk'), jwk)
  const file = mintJwtsToFile(ctx.file('heap.tokens'), { privateJwk: jwk, issuer: publicUrl, audience: publicUrl, scope: SCOPE, count: Number(values.tokens) })
  const routes = [route('api', '/api', up.url, { token: 'jwt', scopes: { GET: [SCOPE] } }), route('public', '/public', up.url, { public: true })]
  const config = await gatewayConfig({ publicUrl, keyFile, routes })
  const bw = ctx.track(await startBearward(ctx, { name: 'bearward-heap', port, config, env: { NODE_OPTIONS: '--inspect=127.0.0.1:0' } }))
  const wsUrl = /ws:\/\/127\.0\.0\.1:\d+\/[\w-]+/.exec(readFileSync(bw.errFile, 'utf8'))?.[0]
  if (wsUrl === undefined) throw new Error(`no inspector URL in ${bw.errFile}`)
  const path = values.route === 'public' ? '/public/items' : '/api/items'
  const load = (amount) =>
    runLoad(
      {
        url: bw.url + path,
        connections: 50,
        warmupSec: 0,
        amount,
        serverPids: [bw.pid],
        ...(values.route === 'public' ? {} : { rotate: { file, as: 'bearer' } }),
      },
      ctx.workDir,
    )
  await load(requests)
  const cdp = await inspector(wsUrl)
  await cdp.send('HeapProfiler.enable')
  await cdp.send('HeapProfiler.collectGarbage')
  await cdp.send('HeapProfiler.startSampling', {
    samplingInterval: Number(values.interval),
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  })
  const measured = await load(requests)
  const { profile } = await cdp.send('HeapProfiler.stopSampling')
  cdp.close()
  if (measured.problems.length > 0) throw new Error(`the load was not clean: ${measured.problems.join('; ')}`)

  // Self bytes per node; every sample stands for `samplingInterval` bytes on average, and V8 scales the
  // node's selfSize accordingly, so the sum is an estimate of all bytes allocated meanwhile.
  const sites = new Map()
  const areas = new Map()
  let total = 0
  const areaOf = (url) => {
    if (url === '') return '(native / V8)'
    const dist = /\/dist\/([^/]+(?:\/|\.js))/.exec(url)
    if (dist) return `bearward ${dist[1]}`
    const mod = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
    if (mod) return mod[1]
    return url.startsWith('node:') ? url.split('/').slice(0, 2).join('/') : url
  }
  const walk = (node) => {
    const f = node.callFrame
    if (node.selfSize > 0) {
      total += node.selfSize
      const where = `${f.functionName || '(anonymous)'}  ${f.url.replace(/^.*\/(dist|node_modules)\//, '$1/')}:${f.lineNumber + 1}`
      sites.set(where, (sites.get(where) ?? 0) + node.selfSize)
      const area = areaOf(f.url)
      areas.set(area, (areas.get(area) ?? 0) + node.selfSize)
    }
    for (const child of node.children) walk(child)
  }
  walk(profile.head)
  const answered = measured.total ?? requests
  const top = (m, n) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, n)
  const line = ([name, bytes]) => `${((100 * bytes) / total).toFixed(1).padStart(5)}%  ${(bytes / answered).toFixed(0).padStart(6)} B/req  ${name}`
  process.stdout.write(
    `bearward ${values.route} route (${path}), ${answered.toLocaleString('en-US')} requests sampled after ${requests.toLocaleString('en-US')} of warm-up: ` +
      `${(total / answered / 1024).toFixed(1)} KiB allocated per request (sampling interval ${values.interval} B)\n\nby area\n` +
      `${top(areas, 15).map(line).join('\n')}\n\nby allocation site (top ${values.top})\n${top(sites, Number(values.top)).map(line).join('\n')}\n`,
  )
} finally {
  await ctx.close()
}
