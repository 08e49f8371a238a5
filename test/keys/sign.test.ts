import t from 'tap'
import { compactVerify, decodeProtectedHeader, importJWK, jwtVerify } from 'jose'
import { generatePrivateJwk, signingKeyFromJwk, SUPPORTED_ALGS } from '../../src/keys/keyset.js'
import { signJwt } from '../../src/keys/sign.js'

t.test('every supported algorithm produces a JWS that jose verifies with the public JWK', async (t) => {
  for (const alg of SUPPORTED_ALGS) {
    const key = await signingKeyFromJwk(await generatePrivateJwk(alg, `k-${alg}`))
    const now = Math.floor(Date.now() / 1000)
    const token = await signJwt(key, 'at+jwt', { iss: 'https://as.example', sub: 'alice', aud: 'https://api.example', iat: now, exp: now + 60, jti: 'j1' })
    t.same(decodeProtectedHeader(token), { alg, kid: `k-${alg}`, typ: 'at+jwt' }, `${alg} header`)
    const publicKey = await importJWK(key.publicJwk, alg)
    const { payload } = await jwtVerify(token, publicKey, { issuer: 'https://as.example', audience: 'https://api.example', typ: 'at+jwt', algorithms: [alg] })
    t.equal(payload.sub, 'alice', `${alg} verifies`)
    const [h, p, s] = token.split('.')
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payload, sub: 'mallory' })).toString('base64url')}.${s}`
    await t.rejects(compactVerify(tampered, publicKey), `${alg}: an altered payload fails`)
    t.ok(p)
  }
})
