/**
 * `authorization_server.access_token.claims`: the person's claims in access
 * tokens issued to a person (JWT) and in introspection answers (opaque),
 * standard OpenID claims only with their scope, never in a client's own
 * token, never replacing a registered claim; refused names at config load.
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { parseConfig } from '../../src/config/load.js'
import { introspect, startAs, token, tokensFor } from '../helpers/as-back.js'
import { frontYaml } from '../helpers/as-front.js'

const CLAIMS = ['email', 'name', 'groups']

t.test('JWT access tokens carry the named claims the person has', async (t) => {
  const h = await startAs({ accessTokenClaims: CLAIMS })
  t.teardown(h.close)

  await t.test('scopes granted: email and name with their scopes, groups always', async (t) => {
    const body = await tokensFor(h, { sub: 'user-0002', scope: 'openid profile email orders:read' })
    const at = decodeJwt(String(body.access_token))
    t.equal(at.email, 'bob@example.com')
    t.equal(at.name, 'Bob')
    t.same(at.groups, ['admins', 'ops'])
    t.equal(at.sub, 'user-0002')
    t.equal(at.client_id, 'web')
    t.equal(at.scope, 'openid profile email orders:read')
    t.equal(at.iss, h.issuer)
  })

  await t.test('without the email and profile scopes the client cannot read them from the token', async (t) => {
    const body = await tokensFor(h, { sub: 'user-0002', scope: 'openid orders:read' })
    const at = decodeJwt(String(body.access_token))
    t.notOk('email' in at, 'no email without the email scope')
    t.notOk('name' in at, 'no name without the profile scope')
    t.same(at.groups, ['admins', 'ops'], 'a claim no scope governs is released')
  })

  await t.test('a claim the person does not have is left out, not sent empty', async (t) => {
    const body = await tokensFor(h, { sub: 'alice', scope: 'openid profile email orders:read' })
    const at = decodeJwt(String(body.access_token))
    t.equal(at.email, 'alice@example.com')
    t.notOk('groups' in at)
    t.notOk('phone_number' in at, 'not named in access_token.claims')
  })

  await t.test('refresh: the new access token carries them too', async (t) => {
    const first = await tokensFor(h, { sub: 'user-0002', scope: 'openid email orders:read offline_access' })
    const r = await token(h, 'web', { grant_type: 'refresh_token', refresh_token: String(first.refresh_token) })
    t.equal(r.status, 200)
    const at = decodeJwt(String(r.json?.access_token))
    t.equal(at.email, 'bob@example.com')
    t.same(at.groups, ['admins', 'ops'])
  })

  await t.test('client_credentials: a client is not a person, nothing added', async (t) => {
    const r = await token(h, 'service', { grant_type: 'client_credentials' })
    t.equal(r.status, 200)
    const at = decodeJwt(String(r.json?.access_token))
    t.equal(at.sub, 'service')
    for (const name of CLAIMS) t.notOk(name in at, `no ${name}`)
  })

  await t.test('introspecting the JWT answers the claims beside the registered members', async (t) => {
    const body = await tokensFor(h, { sub: 'user-0002', scope: 'openid email orders:read' })
    const answer = await introspect(h, String(body.access_token))
    t.equal(answer.active, true)
    t.equal(answer.sub, 'user-0002')
    t.equal(answer.email, 'bob@example.com')
    t.same(answer.groups, ['admins', 'ops'])
  })
})

t.test('opaque access tokens: the claims are kept in the store and answered by introspection', async (t) => {
  const h = await startAs({ format: 'opaque', accessTokenClaims: CLAIMS })
  t.teardown(h.close)
  const body = await tokensFor(h, { sub: 'user-0002', scope: 'openid profile email orders:read' })
  t.notOk(String(body.access_token).includes('.'), 'an opaque token')
  const answer = await introspect(h, String(body.access_token))
  t.same(answer, {
    email: 'bob@example.com',
    name: 'Bob',
    groups: ['admins', 'ops'],
    active: true,
    scope: 'openid profile email orders:read',
    client_id: 'web',
    username: 'bob',
    token_type: 'Bearer',
    exp: answer.exp,
    iat: answer.iat,
    // The code mintCode stored says the person signed in 5 s before (and says nothing of how).
    auth_time: Number(answer.iat) - 5,
    sub: 'user-0002',
    aud: h.issuer,
    iss: h.issuer,
    jti: answer.jti,
  })
  const cc = await token(h, 'service', { grant_type: 'client_credentials' })
  const ccAnswer = await introspect(h, String(cc.json?.access_token))
  t.equal(ccAnswer.active, true)
  for (const name of CLAIMS) t.notOk(name in ccAnswer, `a client's own token: no ${name}`)
})

t.test('by default no claim is added', async (t) => {
  const h = await startAs()
  t.teardown(h.close)
  const at = decodeJwt(String((await tokensFor(h, { sub: 'user-0002', scope: 'openid profile email orders:read' })).access_token))
  for (const name of CLAIMS) t.notOk(name in at, `no ${name}`)
})

t.test('config: a registered claim name is refused with its position', async (t) => {
  for (const name of ['sub', 'iss', 'client_id', 'scope', 'cnf', 'exp', 'jti']) {
    const yaml = (await frontYaml({ asExtra: `  access_token: { claims: [email, ${name}] }\n` })).replace('${PUBLIC_URL}', 'http://127.0.0.1:8080')
    t.throws(
      () => parseConfig(yaml, '<test>', {}),
      { message: new RegExp(`authorization_server\\.access_token\\.claims\\[1\\].*\`${name}\` is a claim bearward sets itself`, 's') },
      name,
    )
  }
  const ok = (await frontYaml({ asExtra: '  access_token: { claims: [email, groups] }\n' })).replace('${PUBLIC_URL}', 'http://127.0.0.1:8080')
  t.same(parseConfig(ok, '<test>', {}).authorizationServer?.accessToken.claims, ['email', 'groups'])
  const notList = (await frontYaml({ asExtra: '  access_token: { claims: email }\n' })).replace('${PUBLIC_URL}', 'http://127.0.0.1:8080')
  t.throws(() => parseConfig(notList, '<test>', {}), { message: /authorization_server\.access_token\.claims/ })
})
