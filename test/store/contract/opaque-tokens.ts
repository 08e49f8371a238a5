/** The contract of opaque access tokens (src/store/opaque-tokens/types.ts), run on every store. */
import type { Test } from 'tap'
import type { OpaqueTokenRecord } from '../../../src/store/types.js'
import { token, nowSec, type Setup } from './fixtures.js'

export function opaqueTokensContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: opaque access tokens`, async (tt) => {
    const { clock, store } = await setup(tt)
    const at = token()
    const rec: OpaqueTokenRecord = {
      iss: 'https://as.example',
      sub: 'alice',
      aud: ['https://api.example'],
      clientId: 'app',
      scope: 'orders:read',
      jti: 'jti-1',
      iat: nowSec(clock),
      exp: nowSec(clock) + 300,
      grantId: null,
    }
    await store.opaqueTokens.put(at.hash, rec)
    tt.same(await store.opaqueTokens.get(at.hash), rec)
    tt.equal(await store.opaqueTokens.delete(at.hash), true)
    tt.equal(await store.opaqueTokens.get(at.hash), null)
    tt.equal(await store.opaqueTokens.delete(at.hash), false, 'second delete finds nothing')

    const short = token()
    await store.opaqueTokens.put(short.hash, { ...rec, exp: nowSec(clock) + 10 })
    clock.advance(10_000)
    tt.equal(await store.opaqueTokens.get(short.hash), null, 'expired')
    tt.equal(await store.opaqueTokens.delete(short.hash), false, 'an expired token was not live')
  })
}
