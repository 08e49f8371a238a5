/**
 * RFC 9396 details through a real Redis (its own redis-server on a free
 * port): the code, the grant and the opaque token records keep an entry
 * exactly, empty arrays and objects, unicode and numbers included, so a
 * refresh and introspection answer what the person approved.
 */
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { RedisStore } from '../../src/store/redis.js'
import { hashToken } from '../../src/store/hash.js'
import { startRedis } from '../helpers/redis.js'
import { hashSecret } from '../../src/crypto/secret.js'
import { basic, codeParams, introspect, mintCode, SECRETS, startAs, token } from '../helpers/as-back.js'

const ENTRY = { type: 'payment_initiation', actions: [], limits: {}, amount: 1.5, payee: 'Café \u202e', nested: [{ a: [] }] }

t.test('authorization details survive the store on Redis', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const h = await startAs({
    format: 'opaque',
    asExtra: '  authorization_details_types: { payment_initiation: { schema: { type: object } } }',
    clientsExtra: `    - { client_id: payer, type: confidential, secret_hash: "${await hashSecret(SECRETS.web ?? '')}", redirect_uris: [https://pay.example.com/cb], grant_types: [authorization_code, refresh_token], scopes: [orders:read], authorization_details_types: [payment_initiation] }`,
    clock: new ManualClock(Date.now()),
    store: (clock) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock }),
  })
  t.teardown(() => h.close())

  const auth = { authorization: basic('payer', SECRETS.web) }
  const code = await mintCode(h, { clientId: 'payer', scope: 'orders:read', authorizationDetails: [ENTRY] })
  const tokens = (await token(h, 'payer', codeParams(code), auth)).json ?? {}
  t.same(tokens.authorization_details, [ENTRY], 'the code record kept the entry')
  const refreshed = await token(h, 'payer', { grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token) }, auth)
  t.equal(refreshed.status, 200)
  t.same(refreshed.json?.authorization_details, [ENTRY], 'the grant record kept it')
  t.same((await introspect(h, String(refreshed.json?.refresh_token))).authorization_details, [ENTRY], "the refresh token's grant")
  const opaque = String(refreshed.json?.access_token)
  t.same((await h.store.opaqueTokens.get(hashToken(opaque)))?.authorizationDetails, [ENTRY], 'the opaque token record')
  t.same((await introspect(h, opaque)).authorization_details, [ENTRY], 'the access token')

  // A grant made while the client was allowed a type the operator has since taken from it: as with scopes, gone at refresh.
  const removed = { type: 'account_information', locations: [] }
  const older = await mintCode(h, { clientId: 'payer', scope: 'orders:read', authorizationDetails: [ENTRY, removed] })
  const before = (await token(h, 'payer', codeParams(older), auth)).json ?? {}
  const after = await token(h, 'payer', { grant_type: 'refresh_token', refresh_token: String(before.refresh_token) }, auth)
  t.same(after.json?.authorization_details, [ENTRY], 'a refresh drops entries of a type the client is no longer allowed')
})
