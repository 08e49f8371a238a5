/** Pooled random values: each one fresh, of the asked size, in the base64url alphabet. */
import t from 'tap'
import { randomBase64url } from '../../src/crypto/random.js'

t.test('values are unique, base64url, and carry the asked number of bytes', async (t) => {
  const seen = new Set<string>()
  // 3 × 4096 bytes' worth: the pool is refilled several times on the way.
  for (let i = 0; i < 800; i++) {
    const id = randomBase64url(16)
    t.equal(Buffer.from(id, 'base64url').length, 16)
    seen.add(id)
    const token = randomBase64url(32)
    t.equal(token.length, 43)
    seen.add(token)
  }
  t.equal(seen.size, 1600, 'no value repeats')
  for (const v of seen) if (!/^[A-Za-z0-9_-]+$/.test(v)) t.fail(`not base64url: ${v}`)
})

t.test('bytes are spread over all values (no stuck pool)', async (t) => {
  const counts = new Array<number>(256).fill(0)
  for (let i = 0; i < 2000; i++) for (const b of Buffer.from(randomBase64url(32), 'base64url')) counts[b] = (counts[b] ?? 0) + 1
  // 64,000 bytes over 256 values: 250 each on average; a zeroed or repeated pool would skew this badly.
  t.ok(Math.max(...counts) < 400 && Math.min(...counts) > 120, `byte counts between ${Math.min(...counts)} and ${Math.max(...counts)}`)
})

t.test('sizes beyond the pool and bad sizes', async (t) => {
  t.equal(Buffer.from(randomBase64url(5000), 'base64url').length, 5000)
  t.throws(() => randomBase64url(0), RangeError)
  t.throws(() => randomBase64url(1.5), RangeError)
})
