import t from 'tap'
import { decodeJwt } from 'jose'
import { DEVICE_GRANT, basic, startAs, token, type Harness } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'

async function authorizeDevice(h: Harness, clientId = 'tv'): Promise<{ deviceCode: string; userCode: string }> {
  const r = await reply(postForm(`${h.url}/device_authorization`, { client_id: clientId }))
  if (r.status !== 200) throw new Error(`device authorization failed: ${r.text}`)
  return { deviceCode: String(r.json?.device_code), userCode: String(r.json?.user_code).replace('-', '') }
}

t.test('device_code grant', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())
  const poll = (deviceCode: string, clientId = 'tv') => token(h, clientId, { grant_type: DEVICE_GRANT, device_code: deviceCode })
  const wait = (sec: number) => h.clock.advance(sec * 1000)

  t.test('pending, then slow_down (interval + 5), then tokens once, then invalid_grant', async (t) => {
    const { deviceCode, userCode } = await authorizeDevice(h)
    const pending = await poll(deviceCode)
    t.equal(pending.status, 400)
    t.same(pending.json, { error: 'authorization_pending', error_description: 'The user has not yet completed authorization' })
    t.equal(pending.headers.get('cache-control'), 'no-store')

    const fast = await poll(deviceCode)
    t.same(fast.json, { error: 'slow_down', error_description: 'Polling too fast; increase the interval by 5 seconds' })
    t.equal((await h.store.devices.getByUserCode(userCode))?.record.intervalSec, 10)

    wait(5)
    t.equal((await poll(deviceCode)).json?.error, 'slow_down', 'the old interval is now too fast')
    t.equal((await h.store.devices.getByUserCode(userCode))?.record.intervalSec, 15)
    wait(15)
    t.equal((await poll(deviceCode)).json?.error, 'authorization_pending', 'the grown interval is respected')

    t.ok(await h.store.devices.decide(userCode, { approved: true, sub: 'alice', authTime: Math.floor(h.clock.now() / 1000) }))
    wait(15)
    const ok = await poll(deviceCode)
    t.equal(ok.status, 200)
    t.equal(ok.json?.scope, 'orders:read')
    t.notOk('refresh_token' in (ok.json ?? {}), 'tv has no refresh_token grant')
    const claims = decodeJwt(String(ok.json?.access_token))
    t.equal(claims.sub, 'alice')
    t.equal(claims.client_id, 'tv')
    t.equal(h.metrics.tokensIssued.get({ grant: 'device_code' }), 1)

    wait(15)
    const again = await poll(deviceCode)
    t.equal(again.status, 400)
    t.equal(again.json?.error, 'invalid_grant', 'consumed: tokens are issued once')
  })

  t.test('a device code approved before the person withdrew the client: invalid_grant at the poll, no grant', async (t) => {
    const now = Math.floor(h.clock.now() / 1000)
    // bob (a configured person): a grant is made only for someone who may still sign in.
    // The person had allowed tv before, so the account page offers to withdraw it.
    await h.store.allowances.note('user-0002', 'tv', { scopes: ['orders:read'], at: now, grantId: null, until: now + 3600 })
    const { deviceCode, userCode } = await authorizeDevice(h)
    t.ok(await h.store.devices.decide(userCode, { approved: true, sub: 'user-0002', authTime: now }))
    wait(1)
    await h.store.allowances.withdraw('user-0002', 'tv', 600) // what POST /account does
    wait(5)
    const issuedBefore = h.metrics.tokensIssued.get({ grant: 'device_code' })
    const r = await poll(deviceCode)
    t.equal(r.status, 400)
    t.equal(r.json?.error, 'invalid_grant')
    t.notOk('access_token' in (r.json ?? {}), 'no access token')
    t.equal(h.metrics.tokensIssued.get({ grant: 'device_code' }), issuedBefore, 'nothing issued')
    t.same(await h.store.allowances.list('user-0002'), [], 'no grant for tv came back')

    const next = await authorizeDevice(h)
    t.ok(await h.store.devices.decide(next.userCode, { approved: true, sub: 'user-0002', authTime: now }))
    wait(5)
    t.equal((await poll(next.deviceCode)).status, 200, 'an approval given after the withdrawal is honoured')
  })

  t.test('a client with openid and refresh_token gets them for its device grant', async (t) => {
    const { deviceCode, userCode } = await authorizeDevice(h, 'spa')
    await h.store.devices.decide(userCode, { approved: true, sub: 'alice', authTime: 1 })
    const ok = await poll(deviceCode, 'spa')
    t.equal(ok.status, 200)
    t.ok(ok.json?.refresh_token)
    t.equal(decodeJwt(String(ok.json?.id_token)).aud, 'spa')
  })

  t.test('RFC 9396: authorization_details in the device flow is refused with invalid_request, never dropped', async (t) => {
    const details = JSON.stringify([{ type: 'payment_initiation', instructedAmount: { currency: 'EUR', amount: '500.00' } }])
    const asked = await reply(postForm(`${h.url}/device_authorization`, { client_id: 'tv', authorization_details: details }))
    t.equal(asked.status, 400)
    t.equal(asked.json?.error, 'invalid_request')
    t.match(asked.json?.error_description, /authorization_details is not supported/)
    t.equal(asked.json?.device_code, undefined, 'no device code was given')
    const { deviceCode, userCode } = await authorizeDevice(h)
    t.ok(await h.store.devices.decide(userCode, { approved: true, sub: 'alice', authTime: Math.floor(h.clock.now() / 1000) }))
    wait(5)
    const issuedBefore = h.metrics.tokensIssued.get({ grant: 'device_code' })
    const withDetails = await token(h, 'tv', { grant_type: DEVICE_GRANT, device_code: deviceCode, authorization_details: details })
    t.equal(withDetails.status, 400)
    t.equal(withDetails.json?.error, 'invalid_request')
    t.notOk('access_token' in (withDetails.json ?? {}), 'no token without the details asked for')
    t.equal(h.metrics.tokensIssued.get({ grant: 'device_code' }), issuedBefore, 'nothing issued')
    wait(5)
    t.equal((await poll(deviceCode)).status, 200, 'the device code was not spent: the poll without details gets its tokens')
  })

  t.test('denied is access_denied', async (t) => {
    const { deviceCode, userCode } = await authorizeDevice(h)
    await h.store.devices.decide(userCode, { approved: false })
    const r = await poll(deviceCode)
    t.equal(r.status, 400)
    t.same(r.json, { error: 'access_denied', error_description: 'The resource owner denied the request' })
  })

  t.test('expired is expired_token', async (t) => {
    const { deviceCode } = await authorizeDevice(h)
    wait(600)
    const r = await poll(deviceCode)
    t.equal(r.status, 400)
    t.same(r.json, { error: 'expired_token', error_description: 'The device code has expired' })
  })

  t.test("another client's device code is invalid_grant and changes nothing", async (t) => {
    const { deviceCode, userCode } = await authorizeDevice(h, 'tv')
    await h.store.devices.decide(userCode, { approved: true, sub: 'alice', authTime: 1 })
    const before = (await h.store.devices.getByUserCode(userCode))?.record
    const r = await poll(deviceCode, 'spa')
    t.equal(r.status, 400)
    t.equal(r.json?.error, 'invalid_grant')
    t.same((await h.store.devices.getByUserCode(userCode))?.record, before, 'not polled, not consumed')
    t.equal((await poll(deviceCode, 'tv')).status, 200, 'the right client still gets its tokens')
  })

  t.test('an unknown or tampered device code is invalid_grant', async (t) => {
    t.equal((await poll('x'.repeat(43))).json?.error, 'invalid_grant')
    const { deviceCode } = await authorizeDevice(h)
    const [random] = deviceCode.split('.')
    t.equal((await poll(`${random}.99999999999`)).json?.error, 'invalid_grant')
  })

  t.test('a confidential client needs the grant type', async (t) => {
    const r = await reply(postForm(`${h.url}/token`, { grant_type: DEVICE_GRANT, device_code: 'x' }, { authorization: basic('service') }))
    t.equal(r.json?.error, 'unauthorized_client')
  })
})
