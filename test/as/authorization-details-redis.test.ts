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
import { introspect, startAs, token, tokensFor } from '../helpers/as-back.js'

const ENTRY = { type: 'payment_initiation', actions: [], limits: {}, amount: 1.5, payee: 'Café \u202e', nested: [{ a: [] }] }

t.test('authorization details survive the store on Redis', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const h = await startAs({
    format: 'opaque',
    clock: new ManualClock(Date.now()),
    store: (clock) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock }),
  })
  t.teardown(() => h.close())

  const tokens = await tokensFor(h, { authorizationDetails: [ENTRY] })
  t.same(tokens.authorization_details, [ENTRY], 'the code record kept the entry')
  const refreshed = await token(h, 'web', { grant_type: 'refresh_token', refresh_token: String(tokens.refresh_token) })
  t.equal(refreshed.status, 200)
  t.same(refreshed.json?.authorization_details, [ENTRY], 'the grant record kept it')
  t.same((await introspect(h, String(refreshed.json?.refresh_token))).authorization_details, [ENTRY], "the refresh token's grant")
  const opaque = String(refreshed.json?.access_token)
  t.same((await h.store.opaqueTokens.get(hashToken(opaque)))?.authorizationDetails, [ENTRY], 'the opaque token record')
  t.same((await introspect(h, opaque)).authorization_details, [ENTRY], 'the access token')
})
