import t from 'tap'
import { DUMMY_HASH, generateClientSecret, hashSecret, parseSecretHash, safeEqual, SecretVerifier } from '../../src/crypto/secret.js'

t.test('hashSecret output is self-describing and verifies', async (t) => {
  const hash = await hashSecret('hunter2')
  t.match(hash, /^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/)
  const v = new SecretVerifier()
  t.equal(await v.verify('hunter2', hash), true)
  t.equal(await v.verify('hunter3', hash), false)
  t.equal(await v.verify('hunter2', 'plaintext'), false, 'a malformed stored hash never verifies')
  t.equal(await v.verify('', DUMMY_HASH), false)
  t.not(await hashSecret('hunter2'), hash, 'salted')
})

t.test('parseSecretHash refuses weak or malformed parameters', async (t) => {
  for (const bad of ['scrypt$16384$8$1$c2FsdA$aGFzaA', 'bcrypt$x', 'scrypt$1000$8$1$AAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAA', 'scrypt$16384$8$1$$', '']) {
    t.equal(parseSecretHash(bad), null, bad)
  }
})

t.test('a client secret costs one scrypt per process, not one per request (ory/hydra#1477)', async (t) => {
  const secret = generateClientSecret()
  t.equal(secret.length, 43)
  const hash = await hashSecret(secret)
  const v = new SecretVerifier()
  const burst = await Promise.all(Array.from({ length: 50 }, () => v.verify(secret, hash)))
  t.ok(burst.every(Boolean))
  t.equal(v.scryptRuns, 1, 'a concurrent burst shares one computation')
  for (let i = 0; i < 100; i++) await v.verify(secret, hash)
  t.equal(v.scryptRuns, 1, 'repeats are memoized')
  t.equal(await v.verify('wrong', hash), false)
  t.equal(await v.verify('wrong', hash), false)
  t.equal(v.scryptRuns, 3, 'failures are never memoized: guessing stays at full price')
})

t.test('safeEqual', async (t) => {
  t.equal(safeEqual('abc', 'abc'), true)
  t.equal(safeEqual('abc', 'abd'), false)
  t.equal(safeEqual('abc', 'abcd'), false)
})
