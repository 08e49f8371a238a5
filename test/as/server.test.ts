import t from 'tap'
import { createServer } from 'node:http'
import { createAuthorizationServer } from '../../src/as/server.js'
import { MemoryStore } from '../../src/store/memory.js'
import type { TakeCodeResult } from '../../src/store/types.js'
import { basic, codeParams, mintCode, send, startAs, token } from '../helpers/as-back.js'
import { closeServer, postForm, reply, listen } from '../helpers/http.js'
import { contextExtras } from '../helpers/trace.js'

t.test('routing: back channel, front channel, and unknown paths', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())
  const authorize = await send(`${h.url}/authorize?client_id=web`, { redirect: 'manual' })
  t.not(authorize.status, 404, '/authorize is served by the front channel')
  t.equal((await send(`${h.url}/nope`)).status, 404)
  t.equal((await send(`${h.url}/jwks.json/`)).status, 404, 'exact paths only')
})

t.test('an issuer with a path: endpoints under it, RFC 8414 metadata at the origin', async (t) => {
  const h = await startAs({ basePath: '/auth' })
  t.teardown(() => h.close())
  const origin = new URL(h.issuer).origin
  const rfc8414 = await send(`${origin}/.well-known/oauth-authorization-server/auth`)
  t.equal(rfc8414.status, 200)
  t.equal(rfc8414.json?.issuer, `${origin}/auth`)
  t.equal(rfc8414.json?.token_endpoint, `${origin}/auth/token`)
  const oidc = await send(`${origin}/auth/.well-known/openid-configuration`)
  t.equal(oidc.json?.issuer, `${origin}/auth`)
  t.equal((await send(`${origin}/.well-known/oauth-authorization-server`)).status, 404)
  const cc = await reply(postForm(`${origin}/auth/token`, { grant_type: 'client_credentials' }, { authorization: basic('service') }))
  t.equal(cc.status, 200)
  t.equal((await send(`${origin}/token`, { method: 'POST' })).status, 404)
})

t.test('an unreachable store is 503 temporarily_unavailable', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())
  const m = await mintCode(h)
  await h.store.close()
  const r = await token(h, 'web', codeParams(m))
  t.equal(r.status, 503)
  t.same(r.json, { error: 'temporarily_unavailable', error_description: 'The service is temporarily unavailable' })
  t.equal(r.headers.get('cache-control'), 'no-store')
  t.ok(h.logs.some((l) => l.msg === 'store unavailable' && l.level === 40))
  t.equal(h.metrics.storeErrors.get({ face: 'as' }), 1, 'counted once, under the one label set (face)')
  t.equal(h.metrics.storeErrors.get({}), 0, 'never without a face')
  const spa = await reply(postForm(`${h.url}/token`, { grant_type: 'refresh_token', refresh_token: 'x', client_id: 'spa' }))
  t.equal(spa.status, 503, 'public clients too')
})

class BrokenStore extends MemoryStore {
  constructor(...args: ConstructorParameters<typeof MemoryStore>) {
    super(...args)
    this.codes.take = async (): Promise<TakeCodeResult> => {
      throw new TypeError('something unexpected')
    }
  }
}

t.test('an unexpected error is 500 server_error, logged without detail in the answer', async (t) => {
  const h = await startAs({ store: (clock) => new BrokenStore(clock, { sweepIntervalMs: 0 }) })
  t.teardown(() => h.close())
  const m = await mintCode(h)
  const r = await token(h, 'web', codeParams(m))
  t.equal(r.status, 500)
  t.same(r.json, { error: 'server_error', error_description: 'Internal error' })
  const line = h.logs.find((l) => l.msg === 'unhandled error')
  t.match(line, { level: 50, face: 'as' })
  t.match(JSON.stringify(line), /something unexpected/)
})

t.test('each endpoint sets its route label', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())
  const face = createAuthorizationServer(h.as)
  const labels: string[] = []
  const server = createServer((req, res) => {
    const ctx = {
      id: 'x',
      log: h.as.log,
      rawPath: (req.url ?? '/').split('?')[0] ?? '/',
      rawQuery: '',
      routeLabel: 'unset',
      closeListener: null,
      ...contextExtras(),
    }
    void face.handle(req, res, ctx).then((handled) => {
      labels.push(handled ? ctx.routeLabel : 'not handled')
      if (!handled) res.end()
    })
  })
  const serverAt = await listen(server)
  t.teardown(() => closeServer(server))
  const base = serverAt.url
  for (const path of [
    '/token',
    '/revoke',
    '/introspect',
    '/userinfo',
    '/device_authorization',
    '/par',
    '/jwks.json',
    '/.well-known/openid-configuration',
    '/.well-known/oauth-authorization-server',
    '/authorize',
    '/elsewhere',
  ]) {
    await send(`${base}${path}`, { redirect: 'manual' })
  }
  t.same(labels, [
    'as:token',
    'as:revoke',
    'as:introspect',
    'as:userinfo',
    'as:device_authorization',
    'as:par',
    'as:jwks',
    'as:metadata',
    'as:metadata',
    'as:authorize',
    'not handled',
  ])
})

t.test('refusals are logged at info with their cause', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())
  const m = await mintCode(h)
  await token(h, 'web', { ...codeParams(m), code_verifier: 'z'.repeat(43) })
  const line = h.logs.find((l) => l.msg === 'request refused')
  t.match(line, { level: 30, error: 'invalid_grant', code: 'ERR_INVALID_GRANT', status: 400, cause: 'S256 code_verifier mismatch' })
})
