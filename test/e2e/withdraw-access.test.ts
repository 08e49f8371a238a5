import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { asConfigYaml, DEMO_PASSWORD, DEMO_SECRET, oneIssuer } from '../helpers/as-config.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { Browser, authorizeAsPerson, parseForms } from '../helpers/browser.js'
import { startRedis } from '../helpers/redis.js'
import { startUpstream } from '../helpers/upstream.js'
import { eventually, freePort } from '../helpers/http.js'
import { basic, form } from '../helpers/store-pair.js'

/**
 * A person withdraws an application on the account page of one bearward
 * instance; the gateway of another instance on the same Redis refuses the
 * access tokens of that grant within a second, and the refresh token is dead.
 */

const CALLBACK = 'http://127.0.0.1:5555/callback'

t.test('withdrawing an application: its tokens are refused by every instance within a second', async (t) => {
  const redis = await startRedis()
  const up = await startUpstream('orders')
  const portA = await freePort()
  const portB = await freePort()
  const dir = await tempConfig('')
  const keyFile = join(dir.dir, 'signing.jwk')
  await writeFile(keyFile, JSON.stringify(await generatePrivateJwk('ES256', 'k1')))
  const yaml = (port: number): Promise<string> => asConfigYaml({ port, upstream: up.url, store: redis.url, override: oneIssuer(portA, keyFile) })
  await writeFile(join(dir.dir, 'a.yaml'), await yaml(portA))
  await writeFile(join(dir.dir, 'b.yaml'), await yaml(portB))
  const a = await startBin(join(dir.dir, 'a.yaml'))
  const b = await startBin(join(dir.dir, 'b.yaml'))
  t.teardown(async () => {
    await a.stop()
    await b.stop()
    await up.close()
    await redis.stop()
    await dir.cleanup()
  })

  // Alice allows `web`; the code becomes tokens at A.
  const person = new Browser()
  const verifier = randomBytes(32).toString('base64url')
  const authorize = `${a.url}/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: CALLBACK,
    scope: 'openid orders:read',
    state: 's1',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })}`
  const callback = await authorizeAsPerson(person, authorize, { username: 'alice', password: DEMO_PASSWORD })
  const exchanged = await form(
    `${a.url}/token`,
    { grant_type: 'authorization_code', code: callback.searchParams.get('code') ?? '', redirect_uri: CALLBACK, code_verifier: verifier },
    basic('web', DEMO_SECRET),
  )
  t.equal(exchanged.status, 200)
  const tokens = (await exchanged.json()) as { access_token: string; refresh_token: string }
  // A refresh at B: the family now has a second access token, issued by the other instance.
  const refreshed = await form(`${b.url}/token`, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, basic('web', DEMO_SECRET))
  t.equal(refreshed.status, 200)
  const second = (await refreshed.json()) as { access_token: string; refresh_token: string }
  const call = (url: string, token: string): Promise<Response> => fetch(`${url}/orders/1`, { headers: { authorization: `Bearer ${token}` } })
  for (const token of [tokens.access_token, second.access_token]) t.equal((await call(b.url, token)).status, 200, 'the gateway at B serves the tokens first')

  // The account page at A lists `web`; the person presses "Withdraw access".
  const page = await person.get(`${a.url}/account`)
  const html = await page.text()
  t.equal(page.status, 200)
  t.match(html, /<h3><bdi>Example Web App<\/bdi><\/h3>/)
  const withdraw = parseForms(html, `${a.url}/account`).find((f) => f.fields.client_id === 'web')
  if (withdraw === undefined) throw new Error('no withdraw form for web')
  const started = performance.now()
  const res = await person.submit(withdraw)
  t.equal(res.status, 303)

  let refusedAt = 0
  const refused = await eventually(
    async () => {
      const statuses = await Promise.all([tokens.access_token, second.access_token].map(async (tok) => (await call(b.url, tok)).status))
      if (statuses.every((s) => s === 401)) refusedAt = performance.now()
      return refusedAt > 0
    },
    1000,
    5,
  )
  const ms = refusedAt - started
  t.ok(refused, 'both access tokens of the grant are refused by B within 1 s')
  t.ok(ms > 0 && ms < 1000, `withdrawal to refusal at the other instance: ${ms.toFixed(1)} ms (limit 1000 ms)`)
  t.comment(`withdrawal at A -> refusal at B: ${ms.toFixed(1)} ms`)
  const forwardedAtRefusal = up.seen.length
  const challenge = (await call(b.url, second.access_token)).headers.get('www-authenticate')
  t.match(challenge, /error="invalid_token"/)
  t.equal((await call(a.url, tokens.access_token)).status, 401, 'and by A')
  t.equal(up.seen.length, forwardedAtRefusal, 'no refused request reached the upstream')

  const again = await form(`${b.url}/token`, { grant_type: 'refresh_token', refresh_token: second.refresh_token }, basic('web', DEMO_SECRET))
  t.equal(again.status, 400)
  t.match(await again.json(), { error: 'invalid_grant' }, 'the refresh token is dead')
})
