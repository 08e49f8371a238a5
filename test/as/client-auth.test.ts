import t from 'tap'
import { basic, SECRETS, startAs } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

const INVALID_CLIENT = { error: 'invalid_client', error_description: 'Client authentication failed' }

t.test('client authentication at /token', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())
  const cc = { grant_type: 'client_credentials' }
  const tokenUrl = `${h.url}/token`

  t.test('a wrong secret is 401 invalid_client with a Basic challenge', async (t) => {
    const r = await reply(postForm(tokenUrl, cc, { authorization: basic('service', 'wrong') }))
    t.equal(r.status, 401)
    t.same(r.json, INVALID_CLIENT)
    t.equal(r.headers.get('www-authenticate'), 'Basic realm="bearward"')
    t.equal(r.headers.get('cache-control'), 'no-store')
  })

  t.test('an unknown client looks the same', async (t) => {
    const r = await reply(postForm(tokenUrl, cc, { authorization: basic('nobody', 'whatever') }))
    t.equal(r.status, 401)
    t.same(r.json, INVALID_CLIENT)
    t.equal(r.headers.get('www-authenticate'), 'Basic realm="bearward"')
  })

  t.test('Basic credentials are form-urlencoded (RFC 6749 2.3.1)', async (t) => {
    const secret = SECRETS.service ?? ''
    t.match(secret, /[ +/:%&=]/, 'the secret has characters that need encoding')
    const r = await reply(postForm(tokenUrl, cc, { authorization: basic('service', secret) }))
    t.equal(r.status, 200)
    const plusForSpace = `Basic ${Buffer.from(`service:${encodeURIComponent(secret)}`).toString('base64')}`
    t.equal((await reply(postForm(tokenUrl, cc, { authorization: plusForSpace }))).status, 200, '%20 for space works too')
    const raw = `Basic ${Buffer.from(`service:${secret}`).toString('base64')}`
    const rawReply = await reply(postForm(tokenUrl, cc, { authorization: raw }))
    t.equal(rawReply.status, 401, 'an unencoded secret does not decode to the secret')
    t.equal(rawReply.json?.error, 'invalid_client')
  })

  t.test('malformed Basic credentials and other schemes are invalid_client', async (t) => {
    for (const authorization of [
      'Basic',
      'Basic !!!',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
      'Bearer abc',
      `Basic ${Buffer.from(':x').toString('base64')}`,
    ]) {
      const r = await reply(postForm(tokenUrl, cc, { authorization }))
      t.equal(r.status, 401, authorization)
      t.equal(r.json?.error, 'invalid_client')
      t.equal(r.headers.get('www-authenticate'), 'Basic realm="bearward"')
    }
  })

  t.test('client_secret_post is refused unless the client is registered for it', async (t) => {
    const r = await reply(postForm(tokenUrl, { ...cc, client_id: 'service', client_secret: SECRETS.service ?? '' }))
    t.equal(r.status, 401)
    t.same(r.json, { error: 'invalid_client', error_description: 'This client is not registered for client_secret_post' })
    const ok = await reply(postForm(tokenUrl, { ...cc, client_id: 'poster', client_secret: SECRETS.poster ?? '' }))
    t.equal(ok.status, 200)
  })

  t.test('two methods at once is invalid_request', async (t) => {
    const r = await reply(postForm(tokenUrl, { ...cc, client_id: 'poster', client_secret: SECRETS.poster ?? '' }, { authorization: basic('poster') }))
    t.equal(r.status, 400)
    t.same(r.json, { error: 'invalid_request', error_description: 'Use only one client authentication method' })
  })

  t.test('a body client_id that differs from the Basic one is invalid_request', async (t) => {
    const r = await reply(postForm(tokenUrl, { ...cc, client_id: 'web' }, { authorization: basic('service') }))
    t.equal(r.status, 400)
    t.equal(r.json?.error, 'invalid_request')
    const same = await reply(postForm(tokenUrl, { ...cc, client_id: 'service' }, { authorization: basic('service') }))
    t.equal(same.status, 200)
  })

  t.test('a confidential client without a secret, or no client at all, is invalid_client', async (t) => {
    const r = await reply(postForm(tokenUrl, { ...cc, client_id: 'service' }))
    t.equal(r.status, 401)
    t.same(r.json, INVALID_CLIENT)
    const none = await reply(postForm(tokenUrl, cc))
    t.equal(none.status, 401)
    t.equal(none.headers.get('www-authenticate'), 'Basic realm="bearward"')
    const unknownPublic = await reply(postForm(tokenUrl, { ...cc, client_id: 'nobody' }))
    t.equal(unknownPublic.status, 401)
  })

  t.test('a public client sending a secret is invalid_client', async (t) => {
    const r = await reply(postForm(tokenUrl, { ...cc, client_id: 'spa', client_secret: 'x' }))
    t.equal(r.status, 401)
    t.equal(r.json?.error, 'invalid_client')
    const viaBasic = await reply(postForm(tokenUrl, cc, { authorization: basic('spa', 'x') }))
    t.equal(viaBasic.status, 401)
  })

  t.test('failures are limited per (client, address): the guessing address gets 429 with Retry-After, even with the right secret', async (t) => {
    const max = h.as.as.rateLimit.clientAuthMaxFailures
    const attacker = { 'x-forwarded-for': '198.51.100.7' }
    for (let i = 0; i < max; i++) {
      const r = await reply(postForm(tokenUrl, cc, { authorization: basic('looker', `wrong-${i}`), ...attacker }))
      t.equal(r.status, 401, `failure ${i + 1}`)
    }
    h.clock.advance(20_000)
    const locked = await reply(postForm(tokenUrl, cc, { authorization: basic('looker'), ...attacker }))
    t.equal(locked.status, 429)
    t.same(locked.json, { error: 'invalid_client', error_description: 'Too many failed client authentications from this address; try again later' })
    t.equal(locked.headers.get('retry-after'), String(h.as.as.rateLimit.windowSec - 20), 'Retry-After: the rest of the window')
    t.equal(locked.headers.get('cache-control'), 'no-store')
    h.clock.advance((h.as.as.rateLimit.windowSec - 20) * 1000)
    t.equal((await reply(postForm(tokenUrl, cc, { authorization: basic('looker'), ...attacker }))).status, 200, 'the window passes')
  })

  t.test("regression: anyone who knew a client_id locked that client out; a stranger's wrong secrets never refuse the right one", async (t) => {
    const max = h.as.as.rateLimit.clientAuthMaxFailures
    for (let i = 0; i < 2 * max; i++) {
      const r = await reply(postForm(tokenUrl, cc, { authorization: basic('looker', `wrong-${i}`), 'x-forwarded-for': '198.51.100.8' }))
      t.equal(r.status, i < max ? 401 : 429, `stranger's attempt ${i + 1}`)
    }
    const real = await reply(postForm(tokenUrl, cc, { authorization: basic('looker'), 'x-forwarded-for': '192.0.2.9' }))
    t.equal(real.status, 200, 'the real client, from its own address, right after')
    t.equal((await reply(postForm(tokenUrl, cc, { authorization: basic('looker') }))).status, 200, 'and from the direct peer')
  })
})

t.test('client authentication failures from one address, whatever the client ids, are limited per address', async (t) => {
  const h = await startAs({ rateLimit: { client_auth_address_max_failures: 6 } })
  t.teardown(() => h.close())
  const ip = { 'x-forwarded-for': '198.51.100.9' }
  const cc = { grant_type: 'client_credentials' }
  for (let i = 0; i < 6; i++) {
    const r = await reply(postForm(`${h.url}/token`, cc, { authorization: basic(`made-up-${i}`, 'guess'), ...ip }))
    t.equal(r.status, 401, `unknown client ${i + 1}`)
  }
  const locked = await reply(postForm(`${h.url}/token`, cc, { authorization: basic('looker'), ...ip }))
  t.equal(locked.status, 429, 'a real client behind that address is refused for the window')
  t.equal(locked.headers.get('retry-after'), '300')
  t.equal(
    (await reply(postForm(`${h.url}/token`, cc, { authorization: basic('looker'), 'x-forwarded-for': '198.51.100.10' }))).status,
    200,
    'other addresses are not',
  )

  // Every endpoint that authenticates clients shares the counters and the rule.
  const endpoints: Array<[string, Record<string, string>]> = [
    ['/revoke', { token: 'x' }],
    ['/introspect', { token: 'x' }],
    ['/device_authorization', { scope: 'orders:read' }],
  ]
  for (const [path, body] of endpoints) {
    const r = await reply(postForm(`${h.url}${path}`, body, { authorization: basic('looker'), ...ip }))
    t.equal(r.status, 429, `${path}: 429 from the locked address`)
    t.equal(r.json?.error, 'invalid_client', `${path}: invalid_client`)
    t.ok(Number(r.headers.get('retry-after')) > 0, `${path}: Retry-After`)
  }
})
