/**
 * The amr/acr a sign-in earns (src/as/sign-in-strength.ts): RFC 8176 names
 * for passwords and passkeys, bearward's acr levels and what meets a
 * requested value, and what is kept of an upstream provider's id_token
 * (a stranger's values: only short printable strings, nothing guessed).
 */
import t from 'tap'
import { passkeySignIn, passwordSignIn, strengthClaims, strengthOf, upstreamSignIn } from '../../src/as/sign-in-strength.js'
import { meetsAcr } from '../../src/tokens/acr.js'

t.test('a password is pwd; a passkey is hwk or swk by where its key lives, with user verification, mfa and phr', async (t) => {
  t.same(passwordSignIn(), { amr: ['pwd'], acr: 'pwd' })
  t.same(passkeySignIn('singleDevice'), { amr: ['hwk', 'user', 'mfa'], acr: 'phr' })
  t.same(passkeySignIn('multiDevice'), { amr: ['swk', 'user', 'mfa'], acr: 'phr' })
})

t.test('a requested value is met at its level or above, or by the same value', async (t) => {
  const pwd = passwordSignIn()
  const passkey = passkeySignIn('singleDevice')
  t.ok(meetsAcr(pwd, ['pwd']))
  t.notOk(meetsAcr(pwd, ['mfa']))
  t.notOk(meetsAcr(pwd, ['phr']))
  t.ok(meetsAcr(pwd, ['phr', 'pwd']), 'any one of the list')
  t.ok(meetsAcr(passkey, ['pwd']))
  t.ok(meetsAcr(passkey, ['mfa']))
  t.ok(meetsAcr(passkey, ['phr']))
  t.notOk(meetsAcr({ amr: ['pwd', 'otp', 'mfa'], acr: 'mfa' }, ['phr']), 'two factors are not a passkey')
  t.notOk(meetsAcr(pwd, ['urn:example:gold']), 'a value of nobody we know')
  t.ok(meetsAcr({ amr: [], acr: 'urn:example:gold' }, ['urn:example:gold']), "a provider's own value, exactly")
  t.notOk(meetsAcr({ amr: [], acr: 'urn:example:gold' }, ['pwd']), "a provider's value is not ranked among ours")
  t.notOk(meetsAcr({ amr: [] }, ['pwd']), 'nothing known meets nothing')
})

t.test("an upstream id_token's amr and acr: kept when well formed, dropped otherwise", async (t) => {
  t.same(upstreamSignIn({ amr: ['pwd', 'otp', 'pwd'], acr: 'urn:example:silver' }, {}), { amr: ['pwd', 'otp'], acr: 'urn:example:silver' })
  t.same(upstreamSignIn({}, {}), { amr: [] }, 'none: nothing claimed')
  t.same(upstreamSignIn({ amr: 'pwd', acr: 2 }, {}), { amr: [] }, 'wrong types')
  t.same(upstreamSignIn({ amr: ['pwd', 7] }, {}), { amr: [] }, 'a list with a non-string')
  t.same(upstreamSignIn({ amr: Array.from({ length: 11 }, (_, i) => `m${i}`) }, {}), { amr: [] }, 'too many')
  t.same(upstreamSignIn({ amr: ['a b'], acr: 'x\ny' }, {}), { amr: [] }, 'not printable')
  t.same(upstreamSignIn({ acr: 'x'.repeat(201) }, {}), { amr: [] }, 'too long')
})

t.test('an upstream acr counts as ours only through acr_values; one spelt like ours, unmapped, is left out', async (t) => {
  for (const ours of ['pwd', 'mfa', 'phr']) t.same(upstreamSignIn({ acr: ours }, {}), { amr: [] }, `${ours}, unmapped: left out`)
  t.same(upstreamSignIn({ acr: 'mfa' }, { 'urn:corp:loa:2': 'mfa' }), { amr: [] }, 'a map that does not name it')
  t.same(upstreamSignIn({ acr: 'urn:corp:loa:2' }, { 'urn:corp:loa:2': 'mfa' }), { amr: [], acr: 'mfa' }, 'mapped')
  t.same(upstreamSignIn({ acr: 'mfa' }, { mfa: 'mfa' }), { amr: [], acr: 'mfa' }, "mapped to itself: the operator's word")
  t.same(upstreamSignIn({ acr: 'toString' }, {}), { amr: [], acr: 'toString' }, 'a prototype name is a value like any other')
  t.same(upstreamSignIn({ acr: 'MFA' }, {}), { amr: [], acr: 'MFA' }, 'another spelling is not ours: kept, met only by itself')
  t.notOk(meetsAcr(upstreamSignIn({ acr: 'MFA' }, {}), ['mfa']))
  t.notOk(meetsAcr(upstreamSignIn({ acr: 'phr' }, {}), ['mfa']), 'an unmapped phr meets no mfa request')
})

t.test('records of an older version read as nothing known; claims leave out what is unknown', async (t) => {
  t.same(strengthOf({}), { amr: [] })
  t.same(strengthOf({ amr: ['pwd'], acr: 'pwd' }), { amr: ['pwd'], acr: 'pwd' })
  t.same(strengthClaims(undefined), {})
  t.same(strengthClaims({ amr: [] }), {})
  t.same(strengthClaims({ amr: ['pwd'], acr: 'pwd' }), { amr: ['pwd'], acr: 'pwd' })
})
