/**
 * Issue #17.2: one rule for our own JWT access tokens at both faces. A token
 * signed with the authorization server's own key but lacking one of RFC 9068
 * 2.2's claims (or carrying one of the wrong type, or a header that points at
 * other keys) is refused alike by the gateway (401, nothing forwarded), by
 * /userinfo (401 invalid_token) and by /introspect (active: false). The same
 * token with every claim passes all three, so each refusal is that claim's.
 */
import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { importJWK, SignJWT, type JWK, type JWTPayload } from 'jose'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { OWN_ACCESS_TOKEN_CLAIMS } from '../../src/tokens/own-access-token.js'
import { asConfigYaml, DEMO_SECRET } from '../helpers/as-config.js'
import { startBinOrCleanUp, tempConfig, type RunningBin } from '../helpers/bin.js'
import { freePort } from '../helpers/http.js'
import { basic, callOrders, form } from '../helpers/store-pair.js'
import { startUpstream } from '../helpers/upstream.js'

t.test('our own access tokens: one claim rule for the gateway, /userinfo and /introspect', async (t) => {
  const up = await startUpstream('orders')
  const cfg = await tempConfig('')
  const jwk = await generatePrivateJwk('ES256', 'own-1')
  const keyFile = join(cfg.dir, 'signing.jwk')
  await writeFile(keyFile, JSON.stringify(jwk))
  const port = await freePort()
  const yaml = await asConfigYaml({ port, upstream: up.url, override: { authorization_server: { keys: [{ file: keyFile }] } } })
  const file = join(cfg.dir, 'gateway.yaml')
  await writeFile(file, yaml)
  const bin: RunningBin = await startBinOrCleanUp(file, async () => {
    await up.close()
    await cfg.cleanup()
  })
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const key = await importJWK(jwk as JWK, 'ES256')

  /** A token as src/as/issue.ts writes one (then altered), signed with our key. */
  const sign = (alter: (claims: JWTPayload) => void = () => undefined, header: Record<string, unknown> = {}): Promise<string> => {
    const now = Math.floor(Date.now() / 1000)
    const claims: JWTPayload = {
      iss: bin.url,
      sub: 'alice',
      aud: bin.url,
      exp: now + 600,
      iat: now,
      jti: randomUUID(),
      client_id: 'web',
      scope: 'openid orders:read',
      grant_id: randomUUID(),
      auth_time: now - 5,
    }
    alter(claims)
    return new SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid: 'own-1', typ: 'at+jwt', ...header }).sign(key)
  }

  const userinfo = (token: string): Promise<Response> =>
    fetch(`${bin.url}/userinfo`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) })
  const introspect = async (token: string): Promise<Record<string, unknown>> => {
    const res = await form(`${bin.url}/introspect`, { token }, basic('service', DEMO_SECRET))
    if (res.status !== 200) throw new Error(`introspect: ${res.status}`)
    return (await res.json()) as Record<string, unknown>
  }

  /** Every face refuses `token`, and nothing reached the upstream. */
  const refusedEverywhere = async (t: Test, token: string, what: string): Promise<void> => {
    const forwarded = up.seen.length
    const gw = await callOrders(bin, token)
    t.equal(gw.status, 401, `${what}: the gateway answers 401`)
    t.match(gw.headers.get('www-authenticate') ?? '', /error="invalid_token"/, `${what}: invalid_token at the gateway`)
    t.equal(up.seen.length, forwarded, `${what}: nothing forwarded`)
    const ui = await userinfo(token)
    t.equal(ui.status, 401, `${what}: /userinfo answers 401`)
    t.match(ui.headers.get('www-authenticate') ?? '', /error="invalid_token"/, `${what}: invalid_token at /userinfo`)
    t.same(await introspect(token), { active: false }, `${what}: /introspect says inactive`)
  }

  t.test('a complete token passes all three faces (the control)', async (t) => {
    const token = await sign()
    const gw = await callOrders(bin, token)
    t.equal(gw.status, 200)
    t.equal(up.seen.at(-1)?.headers['x-auth-subject'], 'alice', 'forwarded as alice')
    const ui = await userinfo(token)
    t.equal(ui.status, 200)
    t.equal(((await ui.json()) as { sub: string }).sub, 'alice')
    const info = await introspect(token)
    t.equal(info.active, true)
    t.equal(info.client_id, 'web')
    t.equal(info.scope, 'openid orders:read')
  })

  t.test('without any one of the required claims: refused by every face', async (t) => {
    t.same([...OWN_ACCESS_TOKEN_CLAIMS].sort(), ['aud', 'client_id', 'exp', 'iat', 'iss', 'jti', 'scope', 'sub'], 'RFC 9068 2.2 and scope')
    for (const name of OWN_ACCESS_TOKEN_CLAIMS) {
      await refusedEverywhere(t, await sign((c) => delete c[name]), `no ${name}`)
    }
  })

  t.test('a claim of the wrong type: refused by every face', async (t) => {
    const cases: Array<[string, (c: JWTPayload) => void]> = [
      ['sub a number', (c) => (c.sub = 7 as unknown as string)],
      ['sub empty', (c) => (c.sub = '')],
      ['jti empty', (c) => (c.jti = '')],
      ['client_id an array', (c) => (c.client_id = ['web'])],
      ['scope an array', (c) => (c.scope = ['openid', 'orders:read'])],
      ['aud an empty list', (c) => (c.aud = [])],
      ['iat a string', (c) => (c.iat = 'now' as unknown as number)],
      ['grant_id a number', (c) => (c.grant_id = 1)],
      ['auth_time a string', (c) => (c.auth_time = 'yesterday')],
      ['cnf without jkt', (c) => (c.cnf = {})],
      [
        'scp instead of scope',
        (c) => {
          delete c.scope
          c.scp = ['openid', 'orders:read']
        },
      ],
    ]
    for (const [what, alter] of cases) await refusedEverywhere(t, await sign(alter), what)
  })

  t.test('header rules hold at both faces: no key pointers, the right typ, a known kid', async (t) => {
    await refusedEverywhere(t, await sign(undefined, { jku: `${bin.url}/jwks` }), 'jku header')
    await refusedEverywhere(t, await sign(undefined, { typ: 'JWT' }), 'typ JWT')
    await refusedEverywhere(t, await sign(undefined, { kid: 'someone-else' }), 'unknown kid')
  })

  t.test('iss and exp are checked alike', async (t) => {
    await refusedEverywhere(t, await sign((c) => (c.iss = 'https://evil.example')), 'another iss')
    await refusedEverywhere(t, await sign((c) => (c.exp = Math.floor(Date.now() / 1000) - 3600)), 'expired an hour ago')
  })
})
