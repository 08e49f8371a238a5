/** The contract of known browsers (src/store/known-browsers/types.ts), run on every store. */
import type { Test } from 'tap'
import { token, type Setup } from './fixtures.js'

export function knownBrowsersContract(t: Test, name: string, setup: Setup): void {
  t.test(`${name}: known browsers`, async (tt) => {
    const { clock, store } = await setup(tt)
    const a = token()
    tt.equal(await store.knownBrowsers.get(a.hash), null, 'unknown')
    await store.knownBrowsers.put(a.hash, 'alice', 100)
    tt.equal(await store.knownBrowsers.get(a.hash), 'alice')
    tt.equal(await store.knownBrowsers.get(token().hash), null, 'another token is not known')
    clock.advance(60_000)
    await store.knownBrowsers.put(a.hash, 'alice', 100)
    clock.advance(60_000)
    tt.equal(await store.knownBrowsers.get(a.hash), 'alice', 'putting it again renews its lifetime')
    clock.advance(40_000)
    tt.equal(await store.knownBrowsers.get(a.hash), null, 'expired')

    // When it was last put: the second factor's count tells a browser known before the app was on.
    const b = token()
    tt.equal(await store.knownBrowsers.remembered(b.hash), null, 'unknown')
    await store.knownBrowsers.put(b.hash, 'bob', 100)
    const first = clock.now()
    tt.same(await store.knownBrowsers.remembered(b.hash), { sub: 'bob', atMs: first })
    clock.advance(5_000)
    await store.knownBrowsers.put(b.hash, 'bob', 100)
    tt.same(await store.knownBrowsers.remembered(b.hash), { sub: 'bob', atMs: first + 5_000 }, 'putting it again moves the time')
  })
}
