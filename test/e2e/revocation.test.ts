import t from 'tap'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { startUpstream } from '../helpers/upstream.js'
import { Browser, authorizeAsPerson } from '../helpers/browser.js'
import { asConfigYaml, DEMO_PASSWORD, DEMO_SECRET, oneIssuer } from '../helpers/as-config.js'
import { mergeConfig } from '../helpers/config-tree.js'
import { startRedis } from '../helpers/redis.js'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { createHash, randomBytes } from 'node:crypto'
import { eventually, freePort } from '../helpers/http.js'
import { basic, form, serviceToken } from '../helpers/store-pair.js'

const call = (bin: RunningBin, path: string, token: string): Promise<Response> => fetch(`${bin.url}${path}`, { headers: { authorization: `Bearer ${token}` } })

/**
 * Two bearward processes on one Redis behave as one service: a revocation at
 * one is enforced by the other within a second, survives restarts, and
 * outages follow each route's policy.
 */
t.test('revocation shared by every instance', async (t) => {
  const redis = await startRedis()
  const up = await startUpstream('orders')
  const portA = await freePort()
  const portB = await freePort()
  const cfgDir = await tempConfig('')
  const keyFile = join(cfgDir.dir, 'signing.jwk')
  await writeFile(keyFile, JSON.stringify(await generatePrivateJwk('ES256', 'k1')))
  const openRoute = { name: 'orders-open', match: { path: '/open-orders' }, upstream: up.url, scopes: { GET: ['orders:read'] }, store_unavailable: 'open' }
  const yaml = (port: number): Promise<string> =>
    asConfigYaml({
      port,
      upstream: up.url,
      store: redis.url,
      routes: [openRoute],
      override: mergeConfig(oneIssuer(portA, keyFile), { gateway: { revocation_resync: '1s' } }),
    })
  const fileA = join(cfgDir.dir, 'a.yaml')
  const fileB = join(cfgDir.dir, 'b.yaml')
  await writeFile(fileA, await yaml(portA))
  await writeFile(fileB, await yaml(portB))
  const a = await startBin(fileA)
  let b = await startBin(fileB)
  t.teardown(async () => {
    await a.stop()
    await b.stop()
    await up.close()
    await redis.stop()
    await cfgDir.cleanup()
  })

  await t.test('a token revoked through A is refused by B within 1 s', async (t) => {
    const token = await serviceToken(a)
    t.equal((await call(b, '/orders/1', token)).status, 200, 'B accepts the token first')
    const started = performance.now()
    const revoke = await form(`${a.url}/revoke`, { token, token_type_hint: 'access_token' }, basic('service', DEMO_SECRET))
    t.equal(revoke.status, 200)
    t.ok(await eventually(async () => (await call(b, '/orders/1', token)).status === 401, 1000, 5), 'refused by B within 1 s')
    const ms = performance.now() - started
    t.comment(`revocation propagation A -> B: ${ms.toFixed(1)} ms`)
    const introspect = await form(`${b.url}/introspect`, { token }, basic('service', DEMO_SECRET))
    t.same(await introspect.json(), { active: false }, 'introspection at B says inactive')
  })

  await t.test('introspection needs client authentication', async (t) => {
    const token = await serviceToken(a)
    const res = await form(`${a.url}/introspect`, { token })
    t.equal(res.status, 401)
    t.match(res.headers.get('www-authenticate'), /^Basic /)
    t.match(await res.json(), { error: 'invalid_client' })
  })

  await t.test('revoking a refresh token kills every access token of its family, at both instances', async (t) => {
    const verifier = randomBytes(32).toString('base64url')
    const challenge = createHash('sha256').update(verifier).digest('base64url')
    const url = `${a.url}/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: 'http://127.0.0.1:5555/callback',
      scope: 'orders:read',
      state: 's1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    })}`
    const cb = await authorizeAsPerson(new Browser(), url, { username: 'alice', password: DEMO_PASSWORD })
    const tokenRes = await form(
      `${a.url}/token`,
      { grant_type: 'authorization_code', code: cb.searchParams.get('code') ?? '', redirect_uri: 'http://127.0.0.1:5555/callback', code_verifier: verifier },
      basic('web', DEMO_SECRET),
    )
    t.equal(tokenRes.status, 200)
    const first = (await tokenRes.json()) as { access_token: string; refresh_token: string }
    const second = (await (
      await form(`${b.url}/token`, { grant_type: 'refresh_token', refresh_token: first.refresh_token }, basic('web', DEMO_SECRET))
    ).json()) as { access_token: string; refresh_token: string }
    t.equal((await call(b, '/orders/1', first.access_token)).status, 200)
    t.equal((await call(a, '/orders/1', second.access_token)).status, 200)
    const revoke = await form(`${b.url}/revoke`, { token: second.refresh_token, token_type_hint: 'refresh_token' }, basic('web', DEMO_SECRET))
    t.equal(revoke.status, 200)
    for (const bin of [a, b]) {
      for (const tok of [first.access_token, second.access_token]) {
        t.ok(await eventually(async () => (await call(bin, '/orders/1', tok)).status === 401, 1000, 5), 'family access token refused')
      }
    }
  })

  await t.test("revoking another client's token changes nothing", async (t) => {
    const token = await serviceToken(a)
    // `web` is a different client: the revocation is answered 200 (no oracle) and ignored.
    const res = await form(`${a.url}/revoke`, { token }, basic('web', DEMO_SECRET))
    t.equal(res.status, 200)
    // No time is waited for a message that must not come: a real revocation sent after it on the same
    // connection reaches B in order, so once B refuses the marker, anything the ignored one published has landed.
    const marker = await serviceToken(a)
    t.equal((await form(`${a.url}/revoke`, { token: marker }, basic('service', DEMO_SECRET))).status, 200)
    t.ok(await eventually(async () => (await call(b, '/orders/1', marker)).status === 401, 5000, 5), 'a revocation sent after it has reached B')
    t.equal((await call(b, '/orders/1', token)).status, 200, 'still valid at B')
  })

  await t.test('a restarted instance keeps refusing revoked tokens', async (t) => {
    const token = await serviceToken(a)
    t.equal((await form(`${a.url}/revoke`, { token }, basic('service', DEMO_SECRET))).status, 200)
    t.ok(await eventually(async () => (await call(b, '/orders/1', token)).status === 401, 1000, 5))
    t.equal(await b.stop(), 0)
    b = await startBin(fileB)
    t.equal((await call(b, '/orders/1', token)).status, 401, 'loaded from Redis at start')
  })

  await t.test('Redis outage: routes answer per their policy; after recovery old and new revocations hold', async (t) => {
    const revokedBefore = await serviceToken(a)
    t.equal((await form(`${a.url}/revoke`, { token: revokedBefore }, basic('service', DEMO_SECRET))).status, 200)
    const live = await serviceToken(a)
    t.ok(await eventually(async () => (await call(b, '/orders/1', revokedBefore)).status === 401, 1000, 5))

    await redis.kill()
    t.ok(await eventually(async () => (await call(b, '/orders/1', live)).status === 503, 5000), 'fail closed by default: 503')
    const closed = await call(b, '/orders/1', live)
    t.equal(closed.status, 503)
    t.match(await closed.json(), { error: 'temporarily_unavailable' })
    t.equal((await call(b, '/open-orders/1', live)).status, 200, 'store_unavailable: open lets a valid token through')
    t.equal((await call(b, '/open-orders/1', revokedBefore)).status, 401, 'a token revoked before the outage stays refused when failing open')
    const ready = await fetch(`${b.admin}/readyz`)
    t.equal(ready.status, 503, '/readyz reports the store')

    await redis.restart()
    t.ok(await eventually(async () => (await call(b, '/orders/1', live)).status === 200, 10000), 'recovers by itself')
    t.equal((await call(b, '/orders/1', revokedBefore)).status, 401, 'revocations made before the outage still hold')
    // A reconnects on its own schedule: until it has, its /revoke answers 503 and a client sends it again.
    const refusals: number[] = []
    t.ok(
      await eventually(
        async () => {
          const status = (await form(`${a.url}/revoke`, { token: live }, basic('service', DEMO_SECRET))).status
          if (status !== 200) refusals.push(status)
          return status === 200
        },
        10000,
        50,
      ),
      'A takes revocations again',
    )
    t.same(
      [...new Set(refusals)].filter((s) => s !== 503),
      [],
      'until then it answered 503 only',
    )
    t.comment(`A answered ${refusals.length} revocation(s) 503 after B had recovered`)
    const answers: number[] = []
    const propagated = await eventually(
      async () => {
        const status = (await call(b, '/orders/1', live)).status
        if (answers.at(-1) !== status) answers.push(status)
        return status === 401
      },
      2000,
      5,
    )
    t.ok(propagated, `new revocations propagate again (B answered, in order: ${answers.join(', ')})`)
    if (!propagated) {
      const storeLines = (bin: RunningBin): string =>
        bin.lines
          .filter((l) => /store|revocation/.test(l))
          .slice(-10)
          .join('\n')
      t.comment(`A's store lines:\n${storeLines(a)}\nB's store lines:\n${storeLines(b)}`)
    }
  })
})
