/**
 * Path normalization: what the gateway matches on is what it forwards, so a
 * path dressed up to look public never reaches a protected upstream path,
 * and tricks the upstream would read differently are refused.
 */
import t from 'tap'
import { hostOf, normalizePath, splitTarget } from '../../src/http/request-target.js'
import { InvalidRequest } from '../../src/errors.js'
import { startGateway } from '../gateway/fixture.js'

t.test('normalizePath', async (t) => {
  const same = ['/', '/orders', '/orders/1', '/a/b.json', '/a/.well-known', '/a/b/']
  for (const p of same) t.equal(normalizePath(p), p, p)
  const cases: Array<[string, string]> = [
    ['//admin', '/admin'],
    ['/a//b///c', '/a/b/c'],
    ['/public/../admin', '/admin'],
    ['/public/%2e%2e/admin', '/admin'],
    ['/public/%2E%2E/admin', '/admin'],
    ['/public/.%2e/admin', '/admin'],
    ['/a/./b', '/a/b'],
    ['/a/b/..', '/a/'],
    ['/a/b/.', '/a/b/'],
    ['/a/..', '/'],
    ['/%7Euser/%41%62%2D%5F', '/~user/Ab-_'],
    ['/caf%c3%a9', '/caf%C3%A9'],
    ['/a%20b', '/a%20b'],
    ['/a%3fb', '/a%3Fb'],
    ['/a/..//b', '/b'],
  ]
  for (const [input, output] of cases) t.equal(normalizePath(input), output, input)
  const refused = [
    '/public/..%2fadmin',
    '/public%2F..%2Fadmin',
    '/a%5cb',
    '/a\\b',
    '/a%00b',
    '/a\u0000b',
    '/a%zz',
    '/a%2',
    '/a%',
    '/..',
    '/a/../..',
    '/%2e%2e/admin',
    '/a#b',
    '/caf\u00e9',
    'orders',
    '',
  ]
  for (const p of refused) t.throws(() => normalizePath(p), InvalidRequest, JSON.stringify(p))
})

t.test('hostOf and absolute-form targets', async (t) => {
  t.equal(hostOf('API.Example.com:8443'), 'api.example.com')
  t.equal(hostOf('api.example.com.'), 'api.example.com')
  t.equal(hostOf('[::1]:8080'), '[::1]')
  t.equal(hostOf(''), null)
  t.equal(hostOf(undefined), null)
  t.same(splitTarget('http://Example.com:80/a/../b?x=1'), { host: 'example.com', rawPath: '/a/../b', rawQuery: 'x=1' }, 'the path is split, not normalized')
  t.same(splitTarget('https://example.com'), { host: 'example.com', rawPath: '/', rawQuery: '' })
  t.same(splitTarget('https://example.com?q'), { host: 'example.com', rawPath: '/', rawQuery: 'q' })
  t.same(splitTarget('/a?b?c'), { host: null, rawPath: '/a', rawQuery: 'b?c' }, 'origin-form')
  for (const target of ['*', 'example.com:443', 'ftp://example.com/', 'http://user@example.com/', 'http:///a']) {
    const split = splitTarget(target)
    t.equal(split.host, null, `${target}: no host`)
    t.throws(() => normalizePath(split.rawPath), InvalidRequest, `${target}: refused by the gateway`)
  }
})

t.test('through the gateway: tricks never reach a route they do not match', async (t) => {
  const gw = await startGateway({
    routes: (up) => `
  - name: public
    match: { path: /public }
    upstream: ${up}
    public: true
  - name: admin
    match: { path: /admin }
    upstream: ${up}
    scopes: { "*": [admin] }
`,
  })
  t.teardown(() => gw.close())

  for (const target of ['/public/../admin', '/public/%2e%2e/admin', '/public/%2E%2E/admin/users', '//admin', '/public/./../admin']) {
    const res = await gw.send(target)
    t.equal(res.status, 401, `${target} is judged as /admin`)
  }
  for (const target of [
    '/public/..%2fadmin',
    '/public%2f..%2fadmin',
    '/public/%2e%2e/%2e%2e/admin',
    '/public/..\\admin',
    '/public/%5c../admin',
    '/public/a%00',
  ]) {
    const res = await gw.send(target)
    t.equal(res.status, 400, target)
    t.equal(res.json().error, 'invalid_request', target)
  }
  t.equal(gw.upstream.seen.length, 0, 'nothing reached the upstream')

  const ok = await gw.send('/public/a/../b/%7efile?q=%2e%2e')
  t.equal(ok.status, 200)
  t.equal(gw.upstream.seen.at(-1)?.url, '/public/b/~file?q=%2e%2e', 'the upstream gets the normalized path; the query is untouched')
  t.equal((await gw.send('/publicity')).status, 404)
  t.equal((await gw.send('/public/..')).status, 404, '/ has no route')

  const token = await gw.mint({ scope: 'admin' })
  const admin = await gw.send(`http://${new URL(gw.url).host}/admin/x`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(admin.status, 200, 'absolute-form target')
  t.equal(gw.upstream.seen.at(-1)?.url, '/admin/x')
  const mismatch = await gw.send('http://elsewhere.example/public/x')
  t.equal(mismatch.status, 400, 'absolute-form host differs from Host')
  t.equal((await gw.send('*', { method: 'OPTIONS' })).status, 400, 'asterisk-form')
})
