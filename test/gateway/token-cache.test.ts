/** The verified-token cache: bounded, least recently used out first, never past an entry's deadline. */
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

t.test('bounded: the least recently used entry goes first', async (t) => {
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
