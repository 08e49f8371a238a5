/** The contract of authenticator apps (TOTP) (src/store/totp/types.ts), run on every store. */
import type { Test } from 'tap'
import type { TotpRecord } from '../../../src/store/types.js'
import { nowSec, type Setup } from './fixtures.js'

export function totpContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: authenticator apps (TOTP) and recovery codes`, async (tt) => {
    const { clock, store } = await setup(tt)
    tt.equal(await store.totp.get('alice'), null, 'none yet')
    const pending: TotpRecord = { secret: 'JBSWY3DPEHPK3PXP', createdAt: nowSec(clock), confirmedAt: null, recovery: [] }
    await store.totp.put('alice', pending)
    tt.same(await store.totp.get('alice'), pending, 'being set up')
    const confirmed: TotpRecord = {
      ...pending,
      confirmedAt: nowSec(clock),
      recovery: [
        { hash: 'h-1', usedAt: null },
        { hash: 'h-2', usedAt: 5 },
      ],
    }
    await store.totp.put('alice', confirmed)
    tt.same(await store.totp.get('alice'), confirmed, 'replaced whole, recovery codes included')
    tt.equal(await store.totp.get('bob'), null, "nobody else's")
    clock.advance(400 * 86_400_000)
    tt.same(await store.totp.get('alice'), confirmed, 'kept until removed')
    await store.totp.delete('alice')
    tt.equal(await store.totp.get('alice'), null, 'removed')
    await store.totp.delete('alice')
  })
}
