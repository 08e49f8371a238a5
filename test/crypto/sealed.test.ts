/**
 * AES-256-GCM sealing (src/crypto/sealed.ts): a fresh nonce per value, the
 * additional data bound in, any change refused, the first key seals and
 * every key opens.
 */
import t from 'tap'
import { Sealer, sealingKey } from '../../src/crypto/sealed.js'

const OLD = sealingKey('an old key of at least thirty-two characters', 'test')
const NEW = sealingKey('a new key of at least thirty-two characters!', 'test')

t.test('a value opens with its additional data, and says whether the current key sealed it', async (t) => {
  const sealer = new Sealer([NEW, OLD])
  const sealed = sealer.seal('JBSWY3DPEHPK3PXP', 'totp:alice')
  t.ok(Sealer.isSealed(sealed))
  t.notMatch(sealed, 'JBSWY3DPEHPK3PXP')
  t.same(sealer.open(sealed, 'totp:alice'), { ok: true, plain: 'JBSWY3DPEHPK3PXP', current: true })
  t.not(sealer.seal('JBSWY3DPEHPK3PXP', 'totp:alice'), sealed, 'a new nonce each time')
  const byOld = new Sealer([OLD]).seal('JBSWY3DPEHPK3PXP', 'totp:alice')
  t.same(sealer.open(byOld, 'totp:alice'), { ok: true, plain: 'JBSWY3DPEHPK3PXP', current: false }, 'an older key opens, due a re-seal')
})

t.test('another record, a changed byte, an unknown key or a broken form do not open', async (t) => {
  const sealer = new Sealer([NEW])
  const sealed = sealer.seal('JBSWY3DPEHPK3PXP', 'totp:alice')
  t.same(sealer.open(sealed, 'totp:bob'), { ok: false, reason: 'not_authentic' }, 'moved to another record')
  const body = sealed.split('.').at(-1) ?? ''
  const flipped = `${sealed.slice(0, -body.length)}${body[0] === 'A' ? 'B' : 'A'}${body.slice(1)}`
  t.same(sealer.open(flipped, 'totp:alice'), { ok: false, reason: 'not_authentic' }, 'a changed byte')
  t.same(new Sealer([OLD]).open(sealed, 'totp:alice'), { ok: false, reason: 'unknown_key' })
  t.same(sealer.open('JBSWY3DPEHPK3PXP', 'totp:alice'), { ok: false, reason: 'malformed' })
  t.same(sealer.open('sealed.v1.x.y', 'totp:alice'), { ok: false, reason: 'malformed' })
})

t.test('one material makes different keys for different purposes', async (t) => {
  t.not(sealingKey('the same material, thirty-two chars or more', 'a').id, sealingKey('the same material, thirty-two chars or more', 'b').id)
  t.equal(sealingKey('the same material, thirty-two chars or more', 'a').id.length, 12)
})
