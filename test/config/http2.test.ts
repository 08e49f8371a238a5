import t from 'tap'
import { keysNeedingRestart } from '../../src/server/reload-rules.js'
import { at, describe, inspect } from './helpers.js'

/** `http2` and the HTTP/2 upstream keys: read at load with positions (docs/http2-grpc.md). */

const ROUTE = (upstream: string, extra = ''): string => `routes:
  - name: svc
    match: { path: /svc }
    upstream: ${upstream}
    public: true
${extra}`

t.test('http2 is off by default and read with its bounds', async (t) => {
  t.same(inspect('store: memory\n').config?.http2, {
    tls: false,
    cleartext: false,
    maxConcurrentStreams: 100,
    maxHeaderListBytes: 16 * 1024,
    maxResets: 200,
    maxResetsPerAddress: 400,
    resetWindowMs: 10_000,
  })
  const { config, problems } = inspect(
    'http2: { cleartext: true, max_concurrent_streams: 50, max_header_list_size: 32kb, max_resets: 10, max_resets_per_address: 30, reset_window: 1s }\n',
  )
  t.same(problems, [], describe(problems))
  t.same(config?.http2, {
    tls: false,
    cleartext: true,
    maxConcurrentStreams: 50,
    maxHeaderListBytes: 32 * 1024,
    maxResets: 10,
    maxResetsPerAddress: 30,
    resetWindowMs: 1000,
  })
})

t.test('upstreams: h2c:// speaks HTTP/2, https:// with http2: true', async (t) => {
  const h2c = inspect(ROUTE('h2c://127.0.0.1:50051/base'))
  t.same(h2c.problems, [], describe(h2c.problems))
  t.equal(h2c.config?.routes[0]?.upstreamHttp2, true)
  t.equal(h2c.config?.routes[0]?.upstream, 'h2c://127.0.0.1:50051/base')
  const tls = inspect(ROUTE('https://svc.internal', '    http2: true\n'))
  t.same(tls.problems, [], describe(tls.problems))
  t.equal(tls.config?.routes[0]?.upstreamHttp2, true)
  t.equal(inspect(ROUTE('http://svc.internal')).config?.routes[0]?.upstreamHttp2, false, 'default: HTTP/1.1')
})

t.test('what cannot work is refused at its position', async (t) => {
  const cases: Array<[string, string, RegExp, number]> = [
    ['http2: { tls: true }\n', 'http2.tls', /set `tls` too/, 1],
    ['http2:\n  max_concurrent_streams: 0\n', 'http2.max_concurrent_streams', /at least 1/, 2],
    ['http2:\n  max_resets: many\n', 'http2.max_resets', /whole number/, 2],
    ['http2:\n  push: true\n', 'http2.push', /unknown key/, 2],
    [ROUTE('http://svc.internal', '    http2: true\n'), 'routes[0].http2', /h2c:\/\/host:port/, 6],
    [ROUTE('h2c://svc.internal', '    http2: false\n'), 'routes[0].http2', /always speaks HTTP\/2/, 6],
    [ROUTE('h2c://user:pw@svc.internal'), 'routes[0].upstream', /credentials/, 4],
    [ROUTE('h2c://svc.internal?x=1'), 'routes[0].upstream', /query/, 4],
  ]
  for (const [yaml, path, message, line] of cases) {
    const { config, problems } = inspect(yaml)
    t.equal(config, null, `refused: ${path}`)
    const found = at(problems, path)
    t.equal(found.length, 1, `${path}: ${describe(problems)}`)
    t.match(found[0]?.message, message)
    t.equal(found[0]?.line, line)
  }
})

t.test('a change to http2 takes effect at the next restart, and the reload says so', async (t) => {
  const before = inspect('store: memory\n').config
  const after = inspect('store: memory\nhttp2: { cleartext: true }\n').config
  if (before === null || after === null) throw new Error('configs refused')
  t.ok(keysNeedingRestart(before, after).includes('http2'))
  t.notOk(keysNeedingRestart(before, before).includes('http2'))
})
