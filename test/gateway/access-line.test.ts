/**
 * Logs an operator can act on (issue #42): the access line names the
 * token's client_id and sub once the gateway admitted it, and a refusal's
 * reason code, at info; `log.access_sub: false` leaves `sub` out; the
 * authorization server's refusals carry their error code too.
 */
import t from 'tap'
import { startGateway } from './fixture.js'

const ROUTES = (u: string): string => `
  - { name: orders, match: { path: /orders }, upstream: "${u}", scopes: { GET: [orders:read] } }
`

function accessLines(logs: readonly string[]): Record<string, unknown>[] {
  return logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request')
}

t.test('admitted: client_id and sub; refused: the reason, at info', async (t) => {
  const h = await startGateway({ routes: ROUTES })
  t.teardown(() => h.close())
  t.equal((await h.get('/orders/1', await h.mint())).status, 200)
  t.equal((await h.get('/orders/2', await h.mint({ scope: 'orders:write' }))).status, 403)
  t.equal((await h.get('/orders/3', await h.mint({ expIn: -120 }))).status, 401)
  t.equal((await h.send('/orders/4')).status, 401)
  const lines = accessLines(h.logs)
  t.match(lines[0], { level: 30, path: '/orders/1', status: 200, client_id: 'web', sub: 'alice' })
  t.notOk('reason' in (lines[0] ?? {}), 'no reason on a request that was served')
  t.match(lines[1], { level: 30, path: '/orders/2', status: 403, reason: 'insufficient_scope' })
  t.match(lines[2], { level: 30, path: '/orders/3', status: 401, reason: 'expired' })
  t.match(lines[3], { level: 30, path: '/orders/4', status: 401, reason: 'missing' })
  t.notOk('sub' in (lines[3] ?? {}) || 'client_id' in (lines[3] ?? {}), 'no token, no client or subject')
})

t.test('log.access_sub: false leaves sub out, client_id stays', async (t) => {
  const h = await startGateway({ routes: ROUTES, log: '{ level: debug, access_sub: false }' })
  t.teardown(() => h.close())
  t.equal((await h.get('/orders/1', await h.mint())).status, 200)
  const [line] = accessLines(h.logs)
  t.match(line, { status: 200, client_id: 'web' })
  t.notOk('sub' in (line ?? {}))
})

t.test('an authorization server refusal names its error code', async (t) => {
  const h = await startGateway({ routes: ROUTES })
  t.teardown(() => h.close())
  const res = await h.send('/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&client_id=nobody&client_secret=x',
  })
  t.equal(res.status, 401)
  t.match(accessLines(h.logs).at(-1), { route: 'as:token', status: 401, reason: 'invalid_client' })
})
