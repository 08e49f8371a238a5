import t from 'tap'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generatePrivateJwk, KeySet, loadKeySet, publicMembers, signingKeyFromJwk } from '../../src/keys/keyset.js'

const ephemeral = async () => signingKeyFromJwk(await generatePrivateJwk('RS256', 'eph'))

t.test('no configured key: the ephemeral one (RS256) signs everything', async (t) => {
  const set = await loadKeySet([], ephemeral)
  t.equal(set.ephemeral, true)
  t.equal(set.signing.kid, 'eph')
  t.equal(set.idToken.alg, 'RS256')
})

t.test('the first key signs access tokens; ID tokens use the first RS256 key; all are published without private members', async (t) => {
  const es = await generatePrivateJwk('ES256', 'es')
  const rs = await generatePrivateJwk('RS256', 'rs')
  const ed = await generatePrivateJwk('EdDSA', 'ed')
  const set = await loadKeySet(
    [{ jwk: es as Record<string, unknown> }, { jwk: rs as Record<string, unknown> }, { jwk: ed as Record<string, unknown> }],
    ephemeral,
  )
  t.equal(set.ephemeral, false)
  t.equal(set.signing.kid, 'es')
  t.equal(set.idToken.kid, 'rs')
  t.same(set.algorithms().sort(), ['ES256', 'EdDSA', 'RS256'])
  t.same(
    set.jwks.keys.map((k) => k.kid),
    ['es', 'rs', 'ed'],
  )
  for (const k of set.jwks.keys) {
    for (const m of ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k']) t.notOk(m in k, `${k.kid} has no ${m}`)
    t.equal(k.use, 'sig')
  }
  t.equal(set.find('rs')?.alg, 'RS256')
  t.equal(set.find('../etc/passwd'), undefined)
})

t.test('only EC keys: ID tokens fall back to the signing key', async (t) => {
  const set = new KeySet([await signingKeyFromJwk(await generatePrivateJwk('ES256', 'a'))], false)
  t.equal(set.idToken.kid, 'a')
})

t.test('bad keys are refused with a reason', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'bw-keys-'))
  const pub = publicMembers(await generatePrivateJwk('ES256'))
  await writeFile(join(dir, 'pub.jwk'), JSON.stringify(pub))
  await t.rejects(loadKeySet([{ file: join(dir, 'pub.jwk') }], ephemeral), /keys\[0\].*no private part/)
  await t.rejects(loadKeySet([{ file: join(dir, 'missing.jwk') }], ephemeral), /keys\[0\]/)
  await t.rejects(loadKeySet([{ jwk: { kty: 'oct', k: 'c2VjcmV0', d: 'x' } }], ephemeral), /symmetric/)
  const rs = await generatePrivateJwk('RS256')
  await t.rejects(loadKeySet([{ jwk: { ...rs, alg: 'ES256' } as Record<string, unknown> }], ephemeral), /does not fit/)
  const dup = await generatePrivateJwk('ES256', 'same')
  const dup2 = await generatePrivateJwk('ES256', 'same')
  await t.rejects(loadKeySet([{ jwk: dup as Record<string, unknown> }, { jwk: dup2 as Record<string, unknown> }], ephemeral), /duplicate kid/)
})
