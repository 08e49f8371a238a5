import t from 'tap'
import { startBin, tempConfig } from '../helpers/bin.js'
import { startUpstream } from '../helpers/upstream.js'
import { Browser, authorizeAsPerson } from '../helpers/browser.js'
import { asConfigYaml, DEMO_PASSWORD, DEMO_SECRET } from '../helpers/as-config.js'
import { freePort } from '../helpers/http.js'
import { basic } from '../helpers/client-auth.js'

/** Tokens, secrets, passwords and cookies never reach the log, even at trace level. */
t.test('the log of a run that used tokens, a secret and a password contains none of them', async (t) => {
  const up = await startUpstream('orders')
  const port = await freePort()
  const yaml = await asConfigYaml({ port, upstream: up.url, override: { log: { level: 'trace' } } })
  const cfg = await tempConfig(yaml)
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await up.close()
    await cfg.cleanup()
  })
  const serviceAuth = basic('service', DEMO_SECRET)
  const tokenRes = await fetch(`${bin.url}/token`, {
    method: 'POST',
    headers: { authorization: serviceAuth, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials&scope=orders%3Aread',
  })
  t.equal(tokenRes.status, 200)
  const { access_token: token } = (await tokenRes.json()) as { access_token: string }
  t.equal((await fetch(`${bin.url}/orders/1?access_token=${token}`, { headers: { authorization: `Bearer ${token}` } })).status, 400, 'two ways at once')
  t.equal((await fetch(`${bin.url}/orders/1`, { headers: { authorization: `Bearer ${token}` } })).status, 200)
  t.equal((await fetch(`${bin.url}/orders/1`, { headers: { authorization: `Bearer ${token}x` } })).status, 401)
  const wrong = await fetch(`${bin.url}/token`, {
    method: 'POST',
    headers: { authorization: basic('service', 'wrong-secret-123'), 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  })
  t.equal(wrong.status, 401)
  const browser = new Browser()
  const cb = await authorizeAsPerson(
    browser,
    `${bin.url}/authorize?response_type=code&client_id=web&redirect_uri=${encodeURIComponent('http://127.0.0.1:5555/callback')}&scope=orders%3Aread&state=x&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`,
    { username: 'alice', password: DEMO_PASSWORD },
  )
  const code = cb.searchParams.get('code') ?? ''
  t.ok(code.length > 20, 'got a code')
  const cookies = [...browser.cookies.values()]
  t.ok(cookies.length > 0, 'the browser holds a session cookie')

  t.equal(await bin.stop(), 0)
  const log = bin.lines.join('\n')
  t.ok(bin.lines.length > 10, 'the run logged')
  for (const [what, secret] of [
    ['access token', token],
    ['token signature', token.split('.')[2] ?? token],
    ['client secret', DEMO_SECRET],
    ['wrong secret', 'wrong-secret-123'],
    ['password', DEMO_PASSWORD],
    ['authorization code', code],
    ...cookies.map((c) => ['cookie', c] as [string, string]),
  ] as Array<[string, string]>) {
    t.notOk(log.includes(secret), `no ${what} in the log`)
  }
})
