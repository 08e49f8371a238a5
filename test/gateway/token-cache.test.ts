/** The verified-token cache: bounded, entries not read lately out first (second chance), never past an entry's deadline. */
import t from 'tap'
import { TokenCache } from '../../src/gateway/token-cache.js'

t.test('entries expire at their deadline', async (t) => {
  const cache = new TokenCache<string>(10)
  cache.set('a', 'A', 1000, 0)
  t.equal(cache.get('a', 999), 'A')
  t.equal(cache.get('a', 1000), undefined)
  t.equal(cache.size, 0, 'an expired entry is dropped when read')
  cache.set('b', 'B', 500, 500)
  t.equal(cache.get('b', 500), undefined, 'an entry already past its deadline is not stored')
})

t.test('bounded: an entry read since the last pass survives; one never read goes first', async (t) => {
  const cache = new TokenCache<number>(2)
  cache.set('a', 1, 10_000, 0)
  cache.set('b', 2, 10_000, 0)
  t.equal(cache.get('a', 1), 1, 'a is now the most recently used')
  cache.set('c', 3, 10_000, 1)
  t.equal(cache.size, 2)
  t.equal(cache.get('b', 2), undefined, 'b was evicted')
  t.equal(cache.get('a', 2), 1)
  t.equal(cache.get('c', 2), 3)
})

t.test('second chance: every entry read is passed over once, then the oldest unread goes', async (t) => {
  const cache = new TokenCache<number>(3)
  cache.set('a', 1, 10_000, 0)
  cache.set('b', 2, 10_000, 0)
  cache.set('c', 3, 10_000, 0)
  for (const k of ['a', 'b', 'c']) cache.get(k, 1)
  cache.set('d', 4, 10_000, 1)
  t.equal(cache.size, 3, 'still bounded when every entry was read')
  t.equal(cache.get('a', 2), undefined, 'after one pass the oldest goes')
  t.same(
    ['b', 'c', 'd'].map((k) => cache.get(k, 2)),
    [2, 3, 4],
  )
  // Those reads marked b, c and d again: inserting e passes over all three and drops b, the oldest.
  cache.set('e', 5, 10_000, 3)
  t.equal(cache.get('b', 4), undefined)
  // Now c and d are unmarked; reading d protects it, so f's insertion drops c.
  t.equal(cache.get('d', 4), 4)
  cache.set('f', 6, 10_000, 5)
  t.equal(cache.size, 3)
  t.equal(cache.get('c', 6), undefined, 'c, not read since it was passed over, went first')
  t.same(
    ['d', 'e', 'f'].map((k) => cache.get(k, 6)),
    [4, 5, 6],
    'd, read since, stayed',
  )
})

t.test('an expired entry is evicted before a live unread one', async (t) => {
  const cache = new TokenCache<number>(2)
  cache.set('short', 1, 100, 0)
  cache.set('long', 2, 10_000, 0)
  cache.get('short', 50)
  cache.set('new', 3, 10_000, 200)
  t.equal(cache.get('long', 201), 2, 'the live entry stays')
  t.equal(cache.get('new', 201), 3)
  t.equal(cache.get('short', 201), undefined)
})

t.test('setting a key again replaces its value and deadline without growing', async (t) => {
  const cache = new TokenCache<number>(2)
  cache.set('a', 1, 1000, 0)
  cache.set('a', 2, 5000, 10)
  t.equal(cache.size, 1)
  t.equal(cache.get('a', 2000), 2)
})

t.test('max 0 disables caching; bad sizes are refused', async (t) => {
  const cache = new TokenCache<number>(0)
  cache.set('a', 1, 10_000, 0)
  t.equal(cache.get('a', 1), undefined)
  t.throws(() => new TokenCache(-1), RangeError)
  t.throws(() => new TokenCache(1.5), RangeError)
})

t.test('delete and clear', async (t) => {
  const cache = new TokenCache<number>(5)
  cache.set('a', 1, 10_000, 0)
  cache.set('b', 2, 10_000, 0)
  cache.delete('a')
  t.equal(cache.get('a', 1), undefined)
  cache.clear()
  t.equal(cache.size, 0)
})

t.test('long keys that share a tail never answer for each other', async (t) => {
  const tail = 'S'.repeat(40)
  const a = 'header.payload-a-0123456789abcdef.' + tail
  const b = 'header.payload-b-0123456789abcdef.' + tail
  const cache = new TokenCache<string>(10)
  cache.set(a, 'identity of a', 10_000, 0)
  t.equal(cache.get(a, 1), 'identity of a')
  t.equal(cache.get(b, 1), undefined, 'a different token with the same signature is a miss')
  cache.delete(b)
  t.equal(cache.get(a, 1), 'identity of a', 'deleting another token leaves the entry')
  cache.set(b, 'identity of b', 10_000, 0)
  t.equal(cache.get(b, 1), 'identity of b')
  t.equal(cache.get(a, 1), undefined, 'it displaced a: a miss, never a wrong answer')
  t.equal(cache.size, 1)
  // A fresh string with the same characters (as every request's header is) hits.
  t.equal(cache.get(['header', 'payload-b-0123456789abcdef', tail].join('.'), 1), 'identity of b')
})
