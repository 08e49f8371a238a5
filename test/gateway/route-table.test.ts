/**
 * Route matching: prefixes on segment boundaries, the most specific route
 * wins (longest prefix, then host, then method), deterministically.
 */
import t from 'tap'
import type { RouteConfig } from '../../src/config/validated-config.js'
import { RouteTable, stripPrefix } from '../../src/gateway/route-table.js'

interface R {
  name: string
  match: RouteConfig['match']
}

const r = (name: string, path: string, host: string | null = null, methods: string[] | null = null): R => ({
  name,
  match: { path, host, methods, caseInsensitive: false },
})

function table(routes: R[]): (path: string, host?: string | null, method?: string) => string | undefined {
  const tbl = new RouteTable(routes, (x) => x.match)
  return (path, host = null, method = 'GET') => {
    const m = tbl.match(path, host, method)
    if (m === undefined) return undefined
    return m.kind === 'route' ? m.value.name : `405 ${m.allow.join(',')}`
  }
}

t.test('prefixes match on segment boundaries', async (t) => {
  const match = table([r('orders', '/orders'), r('root', '/')])
  t.equal(match('/orders'), 'orders')
  t.equal(match('/orders/'), 'orders')
  t.equal(match('/orders/1'), 'orders')
  t.equal(match('/ordersx'), 'root')
  t.equal(match('/'), 'root')
  t.equal(table([r('orders', '/orders')])('/ordersx'), undefined, 'no route: undefined')
})

t.test('longest prefix wins, whatever the config order', async (t) => {
  const match = table([r('api', '/api'), r('v1', '/api/v1'), r('v1-users', '/api/v1/users')])
  t.equal(match('/api/v1/users/7'), 'v1-users')
  t.equal(match('/api/v1/orders'), 'v1')
  t.equal(match('/api/v2'), 'api')
})

t.test('host-specific over any-host, then method-specific over any-method', async (t) => {
  const match = table([r('any', '/x'), r('host', '/x', 'api.example.com'), r('get', '/x', null, ['GET']), r('host-get', '/x', 'api.example.com', ['GET'])])
  t.equal(match('/x', 'api.example.com', 'GET'), 'host-get')
  t.equal(match('/x', 'api.example.com', 'POST'), 'host')
  t.equal(match('/x', 'other.example', 'GET'), 'get')
  t.equal(match('/x', null, 'DELETE'), 'any')
})

t.test('equal routes: the first in the config wins', async (t) => {
  const match = table([r('first', '/x'), r('second', '/x')])
  t.equal(match('/x'), 'first')
})

t.test('a method the most specific routes do not take is 405, not a fall-through', async (t) => {
  const match = table([r('root', '/'), r('read', '/orders', null, ['GET', 'HEAD']), r('write', '/orders', null, ['POST'])])
  t.equal(match('/orders', null, 'DELETE'), '405 GET,HEAD,POST')
  t.equal(match('/orders', null, 'POST'), 'write')
  t.equal(match('/other', null, 'DELETE'), 'root')
})

t.test('a host route for another host does not shadow a shorter any-host prefix', async (t) => {
  const match = table([r('short', '/a'), r('long-host', '/a/b', 'h.example')])
  t.equal(match('/a/b', 'other.example'), 'short')
  t.equal(match('/a/b', 'h.example'), 'long-host')
})

t.test('stripPrefix keeps a leading slash', async (t) => {
  t.equal(stripPrefix('/orders/1', '/orders'), '/1')
  t.equal(stripPrefix('/orders', '/orders'), '/')
  t.equal(stripPrefix('/orders/', '/orders'), '/')
  t.equal(stripPrefix('/x/y', '/'), '/x/y')
})

t.test('case_insensitive routes match the path whatever its ASCII case; others match case by case', async (t) => {
  const routes: R[] = [
    { name: 'admin', match: { path: '/Admin', host: null, methods: null, caseInsensitive: true } },
    { name: 'strict', match: { path: '/strict', host: null, methods: null, caseInsensitive: false } },
    r('root', '/'),
  ]
  const find = table(routes)
  for (const path of ['/admin', '/ADMIN/x', '/aDmIn/%2A', '/Admin']) t.equal(find(path), 'admin', path)
  t.equal(find('/adminx'), 'root', 'still on segment boundaries')
  t.equal(find('/STRICT/x'), 'root', 'a case-sensitive route does not take another case')
  t.equal(find('/strict/x'), 'strict')
})
