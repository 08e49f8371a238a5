import t from 'tap'
import { basic, codeParams, mintCode, send, startAs, token } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

t.test('POST /token request handling', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())
  const tokenUrl = `${h.url}/token`

  t.test('only POST: other methods are 405 with Allow', async (t) => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const r = await send(tokenUrl, { method })
      t.equal(r.status, 405, method)
      t.equal(r.headers.get('allow'), 'POST')
      t.equal(r.json?.error, 'method_not_allowed')
    }
  })

  t.test('a body that is not a form is invalid_request', async (t) => {
    const r = await send(tokenUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: basic('service') },
      body: JSON.stringify({ grant_type: 'client_credentials' }),
    })
    t.equal(r.status, 400)
    t.same(r.json, { error: 'invalid_request', error_description: 'Content-Type must be application/x-www-form-urlencoded' })
    t.equal(r.headers.get('cache-control'), 'no-store')
    t.equal(h.metrics.tokensIssued.get({ grant: 'client_credentials' }), 0, 'nothing issued')
  })

  t.test('grant_type missing is invalid_request', async (t) => {
    const r = await reply(postForm(tokenUrl, {}, { authorization: basic('service') }))
    t.equal(r.status, 400)
    t.same(r.json, { error: 'invalid_request', error_description: 'Parameter grant_type is required' })
  })

  t.test('the password grant and unknown grants are unsupported_grant_type', async (t) => {
    for (const grant of ['password', 'implicit', 'urn:example:custom']) {
      const r = await reply(postForm(tokenUrl, { grant_type: grant, username: 'alice', password: 'x' }, { authorization: basic('web') }))
      t.equal(r.status, 400, grant)
      t.same(r.json, { error: 'unsupported_grant_type', error_description: 'The grant type is not supported' })
    }
  })

  t.test('a grant the client is not registered for is unauthorized_client', async (t) => {
    const r = await token(h, 'service', { grant_type: 'refresh_token', refresh_token: 'x'.repeat(43) })
    t.equal(r.status, 400)
    t.equal(r.json?.error, 'unauthorized_client')
    const device = await token(h, 'web', { grant_type: 'urn:ietf:params:oauth:grant-type:device_code', device_code: 'x' })
    t.equal(device.json?.error, 'unauthorized_client')
  })

  t.test('repeated parameters are invalid_request and leave the code unused', async (t) => {
    const m = await mintCode(h)
    const params = Object.entries(codeParams(m))
    for (const name of ['grant_type', 'code', 'code_verifier', 'redirect_uri', 'client_id']) {
      // client_id is not in a confidential client's body yet: send it twice.
      const extra: [string, string][] =
        name === 'client_id'
          ? [
              ['client_id', 'web'],
              ['client_id', 'web'],
            ]
          : [[name, codeParams(m)[name] ?? '']]
      const r = await reply(postForm(tokenUrl, [...params, ...extra], { authorization: basic('web') }))
      t.equal(r.status, 400, name)
      t.same(r.json, { error: 'invalid_request', error_description: `Parameter ${name} is repeated` })
    }
    t.equal((await token(h, 'web', codeParams(m))).status, 200, 'the code was never touched')
  })

  t.test('unknown parameters are ignored (RFC 6749 3.2)', async (t) => {
    const r = await token(h, 'service', { grant_type: 'client_credentials', foo: 'bar' })
    t.equal(r.status, 200)
    const repeatedUnknown = await reply(
      postForm(
        tokenUrl,
        [
          ['grant_type', 'client_credentials'],
          ['foo', '1'],
          ['foo', '2'],
        ],
        { authorization: basic('service') },
      ),
    )
    t.equal(repeatedUnknown.status, 200)
  })

  t.test('a missing code is invalid_request', async (t) => {
    const r = await token(h, 'web', { grant_type: 'authorization_code' })
    t.same(r.json, { error: 'invalid_request', error_description: 'Parameter code is required' })
  })

  t.test('a body over the limit is 413', async (t) => {
    const r = await reply(postForm(tokenUrl, { grant_type: 'client_credentials', pad: 'x'.repeat(70_000) }, { authorization: basic('service') }))
    t.equal(r.status, 413)
  })

  t.test('routeLabel and unknown paths', async (t) => {
    const r = await send(`${h.url}/token/`)
    t.equal(r.status, 404, 'exact paths only')
  })
})
