import t from 'tap'
import { checkSecretHashShape } from '../../src/config/hash-format.js'
import { editDistance, suggest } from '../../src/config/suggest.js'
import { normalizePathPrefix } from '../../src/config/route-path.js'
import { checkIpRange, checkOrigin } from '../../src/config/values.js'
import { deepFreeze } from '../../src/config/freeze.js'

t.test('editDistance', async (t) => {
  t.equal(editDistance('listen', 'listen'), 0)
  t.equal(editDistance('lisen', 'listen'), 1)
  t.equal(editDistance('', 'abc'), 3)
  t.equal(editDistance('abc', ''), 3)
  t.equal(editDistance('kitten', 'sitting'), 3)
})

t.test('suggest: within two edits, case and separators ignored, prefixes', async (t) => {
  const known = ['listen', 'admin_listen', 'public_url', 'routes', 'client_id']
  t.equal(suggest('lisen', known), 'listen')
  t.equal(suggest('routs', known), 'routes')
  t.equal(suggest('publicUrl', known), 'public_url')
  t.equal(suggest('client-id', known), 'client_id')
  t.equal(suggest('clientId', known), 'client_id')
  t.equal(suggest('admin', known), 'admin_listen', 'a prefix of a known key')
  t.equal(suggest('zzzzzz', known), undefined)
  t.equal(suggest('ab', ['abcdef']), undefined, 'short words are not matched by prefix')
})

t.test('secret hash shape: only scrypt$N$r$p$salt$hash', async (t) => {
  const salt = 'T_fa9RH8qvVUH6zmXvgxwg'
  const hash = '5I6XnQ5GNOnSvh4hfIvI-IzxZqino7IpleF2VoTz-9U'
  t.equal(checkSecretHashShape(`scrypt$16384$8$1$${salt}$${hash}`), undefined)
  const bad: Array<[string, RegExp]> = [
    ['demo-secret', /not a secret hash/],
    [`bcrypt$16384$8$1$${salt}$${hash}`, /not a secret hash/],
    [`scrypt$16384$8$${salt}$${hash}`, /not a secret hash/],
    [`scrypt$abc$8$1$${salt}$${hash}`, /must be integers/],
    [`scrypt$1000$8$1$${salt}$${hash}`, /power of two/],
    [`scrypt$16384$0$1$${salt}$${hash}`, /at least 1/],
    [`scrypt$16384$8$1$sa+t/salt==AAAA$${hash}`, /salt must be base64url/],
    [`scrypt$16384$8$1$${salt}$short`, /hash must be base64url/],
  ]
  for (const [value, reason] of bad) t.match(checkSecretHashShape(value), reason, value)
  t.match(checkSecretHashShape('x'), /bearward hash-secret/, 'every refusal says how to make one')
})

t.test('normalizePathPrefix', async (t) => {
  t.equal(normalizePathPrefix('/a//b/'), '/a/b')
  t.equal(normalizePathPrefix('/a/./b/../c'), '/a/c')
  t.equal(normalizePathPrefix('/a%2Fb'), '/a/b')
  t.equal(normalizePathPrefix('/../..'), '/')
})

t.test('IP ranges and origins', async (t) => {
  for (const ok of ['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8', '0.0.0.0/0']) t.equal(checkIpRange(ok), undefined, ok)
  for (const bad of ['10.0.0.0/33', '::/129', 'localhost', '10.0.0.1/', '1.2.3.4/8/9', '10.0.0.0/x']) t.ok(checkIpRange(bad), bad)
  t.equal(checkOrigin('https://app.example.com'), undefined)
  t.equal(checkOrigin('http://localhost:3000'), undefined)
  t.match(checkOrigin('https://app.example.com/path'), /write `https:\/\/app\.example\.com`/)
  t.match(checkOrigin('not an origin'), /is not an origin/)
})

t.test('deepFreeze freezes nested objects and arrays', async (t) => {
  const value = deepFreeze({ a: { b: [{ c: 1 }] } })
  t.ok(Object.isFrozen(value.a.b[0]))
  t.throws(() => {
    ;(value.a.b as unknown[]).push(2)
  }, TypeError)
})
