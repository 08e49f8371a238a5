/**
 * The company's identity provider ends a session, end to end: node-oidc-provider with its
 * Back-Channel Logout feature is the provider (its SSRF guard overridden, as bearward listens on
 * loopback: upstream-op.ts), `identity_providers[].backchannel_logout: true` with
 * `on_logout: grants`. A person signs in through it and an application gets tokens; the person
 * signs out at the provider; the provider POSTs its logout token to bearward, which ends the
 * person's bearward session and withdraws their grants: the access token is refused within 1 s.
 * Then the same with two `bin/bearward` on one Redis: the provider calls A, and B ends the MCP
 * listen stream and refuses the JWT route's token within 1 s.
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { verifyOwnAccessToken } from '../../src/as/verify-token.js'
import { ManualClock } from '../../src/clock.js'
import { Browser } from '../helpers/browser.js'
import { CLIENT_SECRET, WEB_CALLBACK, authParams, frontYaml, pkce } from '../helpers/as-front.js'
import { eventually } from '../helpers/http.js'
import { serveRuntime } from '../helpers/serve-runtime.js'
import { upstreamSignIn } from '../helpers/upstream-sign-in.js'
import { OP_CLIENT_ID, OP_CLIENT_SECRET, startTestOp, type TestOp } from '../helpers/upstream-op.js'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { asConfig, DEMO_SECRET, oneIssuer } from '../helpers/as-config.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { configYaml } from '../helpers/config-tree.js'
import { freePort } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { basic, form } from '../helpers/store-pair.js'
import { openStream, startStreamingUpstream, within } from '../helpers/streams.js'

const DEMO_CALLBACK = 'http://127.0.0.1:5555/callback'

const PROVIDERS = `  identity_providers:
    - id: corp
      name: Corp SSO
      issuer: \${OP_ISSUER}
      client_id: ${OP_CLIENT_ID}
      client_secret: "\${OP_SECRET}"
      backchannel_logout: true
      on_logout: grants
`

t.test('node-oidc-provider ends the session: bearward’s session and grants end within a second', async (t) => {
  const env: Record<string, string> = { OP_SECRET: OP_CLIENT_SECRET }
  const made: { op?: TestOp } = {}
  const served = await serveRuntime(
    async (url) => {
      made.op = await startTestOp([`${url}/login/upstream/corp/callback`], { backchannelLogoutUri: `${url}/idp/corp/backchannel-logout` })
      env.OP_ISSUER = made.op.issuer
      return frontYaml({ asExtra: PROVIDERS })
    },
    { clock: new ManualClock(Date.now()), env },
  )
  const op = made.op
  if (op === undefined) throw new Error('the provider was not made')
  t.teardown(op.stop)
  t.teardown(served.close)

  const b = new Browser()
  const { challenge, verifier } = pkce()
  const start = `${served.url}/authorize?${new URLSearchParams(authParams({ scope: 'openid orders:read', code_challenge: challenge }))}`
  const end = await upstreamSignIn(b, start, new URL(WEB_CALLBACK).origin, 'corp', 'ann')
  if (end.kind !== 'client') throw new Error(`sign-in ended on a ${end.status} page: ${end.html.slice(0, 300)}`)
  const res = await fetch(`${served.url}/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`web:${CLIENT_SECRET}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: end.url.searchParams.get('code') ?? '',
      redirect_uri: WEB_CALLBACK,
      code_verifier: verifier,
    }),
  })
  t.equal(res.status, 200)
  const tokens = (await res.json()) as { access_token: string; id_token: string }
  t.equal(decodeJwt(tokens.id_token).sub, 'corp:ann')
  t.ok(await verifyOwnAccessToken(served.as, tokens.access_token), 'the access token works')
  const signedIn = async (): Promise<boolean> => /<h1>Your account<\/h1>/.test(await (await b.get(`${served.url}/account`)).text())
  t.ok(await signedIn(), 'signed in at bearward')

  // The person signs out at the provider (its end-session page and confirmation).
  const page = await (await b.get(`${op.issuer}/session/end`)).text()
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(page)?.[1]
  if (xsrf === undefined) throw new Error(`no sign-out form at the provider: ${page.slice(0, 300)}`)
  const action = new URL(/action="([^"]+)"/.exec(page)?.[1] ?? '/session/end/confirm', op.issuer).toString()
  const started = performance.now()
  b.origin = op.issuer
  const confirmed = await b.submit({ action, method: 'POST', fields: { xsrf }, buttons: [] }, { logout: 'yes' })
  t.ok(confirmed.status < 400, `the provider signed the person out (${confirmed.status})`)

  let refusedAt = 0
  const refused = await eventually(
    async () => {
      if ((await verifyOwnAccessToken(served.as, tokens.access_token)) === null) refusedAt = performance.now()
      return refusedAt > 0
    },
    1000,
    5,
  )
  t.ok(refused, 'the access token is refused')
  t.comment(`provider sign-out -> token refused: ${(refusedAt - started).toFixed(1)} ms`)
  t.ok(refusedAt - started < 1000, 'within 1 s')
  t.notOk(await signedIn(), 'the bearward session ended')
  t.ok(
    served.logs.some((l) => l.event === 'provider_logout' && l.provider === 'corp' && l.by === 'sid'),
    'the provider named its session (sid), and bearward ended the sessions of it',
  )
})

t.test('two instances on one Redis: the provider’s logout at A ends the MCP listen stream and the JWT route’s token at B within 1 s', async (t) => {
  const redis = await startRedis()
  const up = await startStreamingUpstream()
  const portA = await freePort()
  const portB = await freePort()
  const publicUrl = `http://127.0.0.1:${portA}`
  // The provider calls the public URL (instance A); the person and the application use B too.
  const op = await startTestOp([`${publicUrl}/login/upstream/corp/callback`], { backchannelLogoutUri: `${publicUrl}/idp/corp/backchannel-logout` })
  const dir = await tempConfig('')
  const keyFile = join(dir.dir, 'signing.jwk')
  await writeFile(keyFile, JSON.stringify(await generatePrivateJwk('ES256', 'k1')))
  const yaml = async (port: number): Promise<string> => {
    const config = await asConfig({
      port,
      upstream: up.url,
      store: redis.url,
      override: oneIssuer(portA, keyFile),
      routes: [{ name: 'mcp', match: { path: '/mcp' }, upstream: up.url, token: 'jwt', mcp: { tools: { delete_order: ['orders:write'] } } }],
    })
    config.authorization_server.identity_providers = [
      {
        id: 'corp',
        name: 'Corp SSO',
        issuer: op.issuer,
        client_id: OP_CLIENT_ID,
        client_secret: OP_CLIENT_SECRET,
        backchannel_logout: true,
        on_logout: 'grants',
      },
    ]
    return configYaml(config)
  }
  await writeFile(join(dir.dir, 'a.yaml'), await yaml(portA))
  await writeFile(join(dir.dir, 'b.yaml'), await yaml(portB))
  const a = await startBin(join(dir.dir, 'a.yaml'))
  const b = await startBin(join(dir.dir, 'b.yaml'))
  t.teardown(async () => {
    await a.stop()
    await b.stop()
    await op.stop()
    await up.close()
    await redis.stop()
    await dir.cleanup()
  })

  // The person signs in at A through the provider; the web client gets a JWT access token.
  const person = new Browser()
  const { challenge, verifier } = pkce()
  const authorize = `${a.url}/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: DEMO_CALLBACK,
    scope: 'openid orders:read',
    state: 's1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  })}`
  const end = await upstreamSignIn(person, authorize, new URL(DEMO_CALLBACK).origin, 'corp', 'ann')
  if (end.kind !== 'client') throw new Error(`sign-in ended on a ${end.status} page: ${end.html.slice(0, 300)}`)
  const exchanged = await form(
    `${a.url}/token`,
    { grant_type: 'authorization_code', code: end.url.searchParams.get('code') ?? '', redirect_uri: DEMO_CALLBACK, code_verifier: verifier },
    basic('web', DEMO_SECRET),
  )
  t.equal(exchanged.status, 200)
  const token = ((await exchanged.json()) as { access_token: string }).access_token

  // In use at B: the JWT route, and an MCP listen stream (2026-07-28: the POST's response).
  const orders = async (): Promise<number> => (await fetch(`${b.url}/orders/1`, { headers: { authorization: `Bearer ${token}` } })).status
  t.equal(await orders(), 200, 'the JWT route serves the token at B')
  const listen = await openStream(`${b.url}/mcp`, token, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'subscriptions/listen', params: {} }),
  })
  t.equal(listen.status, 200, 'the listen stream is open at B')
  await listen.chunkAfter(performance.now())

  // The person signs out at the provider, which POSTs its logout token to A.
  const page = await (await person.get(`${op.issuer}/session/end`)).text()
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(page)?.[1]
  if (xsrf === undefined) throw new Error(`no sign-out form at the provider: ${page.slice(0, 300)}`)
  const action = new URL(/action="([^"]+)"/.exec(page)?.[1] ?? '/session/end/confirm', op.issuer).toString()
  person.origin = op.issuer
  const started = performance.now()
  const confirmed = await person.submit({ action, method: 'POST', fields: { xsrf }, buttons: [] }, { logout: 'yes' })
  t.ok(confirmed.status < 400, `the provider signed the person out (${confirmed.status})`)

  t.ok(await within(listen.ended, 3000), 'the listen stream at B ends')
  let refusedAt = 0
  t.ok(
    await eventually(
      async () => {
        if ((await orders()) === 401) refusedAt = performance.now()
        return refusedAt > 0
      },
      3000,
      5,
    ),
    'the JWT route at B refuses the token',
  )
  const streamMs = (listen.endedAt ?? 0) - started
  const tokenMs = refusedAt - started
  t.comment(`provider sign-out -> stream at B ended: ${streamMs.toFixed(1)} ms; -> token refused at B: ${tokenMs.toFixed(1)} ms`)
  t.ok(streamMs < 1000, `stream ended within 1 s (${streamMs.toFixed(1)} ms)`)
  t.ok(tokenMs < 1000, `token refused within 1 s (${tokenMs.toFixed(1)} ms)`)
  t.notOk(/<h1>Your account<\/h1>/.test(await (await person.get(`${b.url}/account`)).text()), 'the bearward session ended (seen at B)')
})
