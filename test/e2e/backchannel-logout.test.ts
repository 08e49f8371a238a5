/**
 * Back-channel logout deliveries with two bearward processes on one redis-server: a person signs
 * in five times (five sessions) for the `web` client, which has a `backchannel_logout_uri`, then
 * signs out everywhere at the other instance. Both instances poll the queue in Redis; each of the
 * five logout tokens reaches the client exactly once (five distinct sids and jtis), and the queue
 * is empty afterwards.
 */
import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { decodeJwt } from 'jose'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { asConfig, DEMO_PASSWORD, DEMO_SECRET, demoClient, oneIssuer } from '../helpers/as-config.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { Browser, authorizeAsPerson, parseForms } from '../helpers/browser.js'
import { configYaml } from '../helpers/config-tree.js'
import { askRedis, startRedis } from '../helpers/redis.js'
import { startUpstream } from '../helpers/upstream.js'
import { eventually, freePort } from '../helpers/http.js'
import { basic, form } from '../helpers/store-pair.js'

const CALLBACK = 'http://127.0.0.1:5555/callback'
const SESSIONS = 5

t.test('two instances on one Redis deliver each logout token exactly once', async (t) => {
  const redis = await startRedis()
  const up = await startUpstream('orders')
  const receiver = await startUpstream('web-logout', (_req, res) => {
    res.writeHead(200)
    res.end()
  })
  const portA = await freePort()
  const portB = await freePort()
  const dir = await tempConfig('')
  const keyFile = join(dir.dir, 'signing.jwk')
  await writeFile(keyFile, JSON.stringify(await generatePrivateJwk('ES256', 'k1')))
  const yaml = async (port: number): Promise<string> => {
    const config = await asConfig({ port, upstream: up.url, store: redis.url, override: oneIssuer(portA, keyFile) })
    demoClient(config, 'web').backchannel_logout_uri = `${receiver.url}/logout/backchannel`
    return configYaml(config)
  }
  await writeFile(join(dir.dir, 'a.yaml'), await yaml(portA))
  await writeFile(join(dir.dir, 'b.yaml'), await yaml(portB))
  const a = await startBin(join(dir.dir, 'a.yaml'))
  const b = await startBin(join(dir.dir, 'b.yaml'))
  t.teardown(async () => {
    await a.stop()
    await b.stop()
    await up.close()
    await receiver.close()
    await redis.stop()
    await dir.cleanup()
  })

  // Five sessions of alice, each signing `web` in (an id_token with its sid), at A.
  const sids: string[] = []
  let last: Browser | null = null
  for (let i = 0; i < SESSIONS; i++) {
    const person = new Browser()
    const verifier = randomBytes(32).toString('base64url')
    const authorize = `${a.url}/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: CALLBACK,
      scope: 'openid orders:read',
      state: `s${i}`,
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
    sids.push(String(decodeJwt(((await exchanged.json()) as { id_token: string }).id_token).sid))
    last = person
  }
  t.equal(new Set(sids).size, SESSIONS, 'five sessions, five sids')
  if (last === null) throw new Error('no session')

  // "Sign out everywhere" at B, in the last session's browser.
  const page = await last.get(`${b.url}/account`)
  const everywhere = parseForms(await page.text(), `${b.url}/account`).find((f) => f.buttons.some((x) => x.name === 'sign_out'))
  if (everywhere === undefined) throw new Error('no "Sign out everywhere" form at B')
  // Both instances serve one public_url (A's): a browser there sends that origin.
  last.origin = `http://127.0.0.1:${portA}`
  const signedOut = await last.submit(everywhere, { sign_out: 'everywhere' })
  t.equal(signedOut.status, 200, 'signed out everywhere at B')

  const delivered = await eventually(() => receiver.seen.length >= SESSIONS, 10_000, 20)
  t.ok(delivered, `the client got ${receiver.seen.length} logout tokens`)
  const queueEmpty = await eventually(async () => (await askRedis(redis.port, (c) => c.zcard('bw:dq:{bcl}'))) === 0, 5000, 20)
  t.ok(queueEmpty, 'nothing is left queued in Redis')
  const tokens = receiver.seen.map((s) => decodeJwt(new URLSearchParams(s.body).get('logout_token') ?? ''))
  t.equal(receiver.seen.length, SESSIONS, 'exactly five POSTs: none delivered twice')
  t.same(tokens.map((p) => String(p.sid)).sort(), [...sids].sort(), 'one per session, each with its sid')
  t.equal(new Set(tokens.map((p) => p.jti)).size, SESSIONS, 'five distinct jtis')
  t.ok(
    tokens.every((p) => p.aud === 'web' && p.iss === `http://127.0.0.1:${portA}`),
    'each addressed to the client, from the one issuer',
  )
})
