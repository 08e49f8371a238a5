import t from 'tap'
import { SPA_ORIGIN, WEB_ORIGIN, basic, send, startAs, tokensFor } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

t.test('CORS at the client endpoints', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())

  for (const path of ['/token', '/revoke', '/userinfo', '/device_authorization']) {
    t.test(`${path}: preflight from an allowed origin`, async (t) => {
      const r = await send(`${h.url}${path}`, {
        method: 'OPTIONS',
        headers: { origin: SPA_ORIGIN, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' },
      })
      t.equal(r.status, 204)
      t.equal(r.headers.get('access-control-allow-origin'), SPA_ORIGIN)
      t.match(r.headers.get('access-control-allow-methods'), /POST/)
      t.match(r.headers.get('access-control-allow-headers'), /Authorization, Content-Type/)
      t.equal(r.headers.get('access-control-max-age'), '600')
      t.equal(r.headers.get('vary'), 'Origin')
      t.equal(r.headers.get('access-control-allow-credentials'), null)
    })

    t.test(`${path}: preflight from an unknown origin gets no CORS headers`, async (t) => {
      const r = await send(`${h.url}${path}`, {
        method: 'OPTIONS',
        headers: { origin: 'https://evil.example.com', 'access-control-request-method': 'POST' },
      })
      t.equal(r.status, 204)
      t.equal(r.headers.get('access-control-allow-origin'), null)
      t.equal(r.headers.get('access-control-allow-methods'), null)
      t.equal(r.headers.get('vary'), 'Origin')
    })
  }

  t.test('responses (success and error) carry ACAO only for listed origins', async (t) => {
    const ok = await reply(postForm(`${h.url}/token`, { grant_type: 'client_credentials' }, { authorization: basic('service'), origin: WEB_ORIGIN }))
    t.equal(ok.status, 200)
    t.equal(ok.headers.get('access-control-allow-origin'), WEB_ORIGIN)
    t.equal(ok.headers.get('vary'), 'Origin')

    const err = await reply(postForm(`${h.url}/token`, { grant_type: 'client_credentials' }, { authorization: basic('service', 'bad'), origin: SPA_ORIGIN }))
    t.equal(err.status, 401)
    t.equal(err.headers.get('access-control-allow-origin'), SPA_ORIGIN)
    t.match(err.headers.get('access-control-expose-headers'), /WWW-Authenticate/)

    const evil = await reply(
      postForm(`${h.url}/token`, { grant_type: 'client_credentials' }, { authorization: basic('service'), origin: 'https://evil.example.com' }),
    )
    t.equal(evil.status, 200, 'the request is served; the browser withholds it')
    t.equal(evil.headers.get('access-control-allow-origin'), null)
    t.equal(evil.headers.get('vary'), 'Origin')
  })

  t.test('userinfo answers a listed origin', async (t) => {
    const body = await tokensFor(h, { scope: 'openid' })
    const r = await send(`${h.url}/userinfo`, { headers: { authorization: `Bearer ${String(body.access_token)}`, origin: WEB_ORIGIN } })
    t.equal(r.status, 200)
    t.equal(r.headers.get('access-control-allow-origin'), WEB_ORIGIN)
  })

  t.test('introspection is server-to-server: no CORS', async (t) => {
    const r = await send(`${h.url}/introspect`, { method: 'OPTIONS', headers: { origin: WEB_ORIGIN, 'access-control-request-method': 'POST' } })
    t.equal(r.headers.get('access-control-allow-origin'), null)
    const post = await reply(postForm(`${h.url}/introspect`, { token: 'x' }, { authorization: basic('looker'), origin: WEB_ORIGIN }))
    t.equal(post.headers.get('access-control-allow-origin'), null)
  })

  t.test('OPTIONS without preflight headers is 204 with Allow', async (t) => {
    const r = await send(`${h.url}/token`, { method: 'OPTIONS' })
    t.equal(r.status, 204)
    t.equal(r.headers.get('allow'), 'POST, OPTIONS')
    t.equal(r.headers.get('access-control-allow-origin'), null)
  })
})
