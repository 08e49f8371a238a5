/**
 * DPoP end to end (RFC 9449): bin/bearward with a real upstream, oauth4webapi
 * as the independent client (its DPoP handle signs the proofs), and every
 * refusal the gateway owes a client, each checked to have sent nothing
 * upstream. The replay cache is shown shared by two instances on one real
 * redis-server.
 */
import { request as httpRequest } from 'node:http'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import * as oauth from 'oauth4webapi'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { asConfigYaml, DEMO_PASSWORD, DEMO_SECRET, oneIssuer } from '../helpers/as-config.js'
import type { ConfigTree } from '../helpers/config-tree.js'
import { startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { Browser, authorizeAsPerson, parseForms } from '../helpers/browser.js'
import { makeProof, proofKeyPair, type ProofKeyPair } from '../helpers/dpop.js'
import { startRedis } from '../helpers/redis.js'
import { startUpstream } from '../helpers/upstream.js'
import { freePort } from '../helpers/http.js'
import { basic } from '../helpers/client-auth.js'

const insecure = { [oauth.allowInsecureRequests]: true } as const

/** A route that takes DPoP-bound tokens only, beside the default `orders` route that takes both. */
const secureRoute = (upstream: string): ConfigTree => ({
  name: 'secure',
  match: { path: '/secure' },
  upstream,
  dpop: 'required',
  scopes: { GET: ['orders:read'] },
})

async function discover(bin: RunningBin): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(bin.url.replace(/\/$/, ''))
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }))
}

/** A person approves a device code on the verification page (log in, confirm, allow). */
async function approveDevice(verificationUriComplete: string): Promise<void> {
  const browser = new Browser()
  const origin = new URL(verificationUriComplete).origin
  let { res, url } = await browser.follow(await browser.get(verificationUriComplete), verificationUriComplete, origin)
  for (let step = 0; step < 6; step++) {
    const html = await res.text()
    const forms = parseForms(html, url).filter((f) => f.method === 'POST')
    const login = forms.find((f) => 'password' in f.fields)
    const consent = forms.find((f) => f.buttons.some((b) => b.name === 'decision'))
    const code = forms.find((f) => 'user_code' in f.fields)
    let sent: Response
    if (login) sent = await browser.submit(login, { username: 'alice', password: DEMO_PASSWORD })
    else if (consent) sent = await browser.submit(consent, { decision: 'allow' })
    else if (code) {
      const button = code.buttons[0]
      sent = await browser.submit(code, { user_code: code.fields.user_code ?? '', ...(button ? { [button.name]: button.value } : {}) })
    } else return
    ;({ res, url } = await browser.follow(sent, url, origin))
  }
  throw new Error('the device page flow did not finish')
}

interface Sent {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** One request with exactly the header lines given (two `DPoP` lines stay two lines). */
function rawGet(url: string, headers: Array<[string, string]>, method = 'GET'): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method })
    const grouped = new Map<string, string[]>()
    for (const [name, value] of headers) grouped.set(name, [...(grouped.get(name) ?? []), value])
    for (const [name, values] of grouped) req.setHeader(name, values.length === 1 ? (values[0] as string) : values)
    req.on('response', (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (body += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('DPoP with oauth4webapi through bin/bearward', async (t) => {
  const up = await startUpstream('orders')
  const port = await freePort()
  const cfg = await tempConfig(await asConfigYaml({ port, upstream: up.url, routes: [secureRoute(up.url)] }))
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const as = await discover(bin)
  t.ok(as.dpop_signing_alg_values_supported?.includes('ES256'), 'metadata lists the proof algorithms')
  const secure = new URL(`${bin.url}/secure/7`)

  await t.test('RFC 9728 metadata of the routes says which require DPoP', async (t) => {
    const required = (await (await fetch(`${bin.url}/.well-known/oauth-protected-resource/secure`)).json()) as Record<string, unknown>
    t.equal(required.dpop_bound_access_tokens_required, true)
    t.same(required.dpop_signing_alg_values_supported, ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'RS256', 'PS256'])
    const both = (await (await fetch(`${bin.url}/.well-known/oauth-protected-resource/orders`)).json()) as Record<string, unknown>
    t.equal(both.dpop_bound_access_tokens_required, false)
  })

  await t.test('client credentials: a DPoP token, accepted at a dpop: required route with a fresh proof per request', async (t) => {
    const client: oauth.Client = { client_id: 'service' }
    const DPoP = oauth.DPoP(client, await oauth.generateKeyPair('ES256'))
    const res = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic(DEMO_SECRET), { scope: 'orders:read' }, { DPoP, ...insecure })
    const tokens = await oauth.processClientCredentialsResponse(as, client, res)
    t.equal(tokens.token_type, 'dpop')
    for (let i = 0; i < 3; i++) {
      const r = await oauth.protectedResourceRequest(tokens.access_token, 'GET', secure, undefined, undefined, { DPoP, ...insecure })
      t.equal(r.status, 200, `request ${i + 1} passes`)
    }
    const seen = up.seen.at(-1)
    t.equal(seen?.url, '/secure/7')
    t.equal(seen?.headers['x-auth-client-id'], 'service')
    t.equal(seen?.headers.dpop, undefined, 'the proof is not forwarded')
    t.equal(seen?.headers.authorization, undefined, 'nor the token')
  })

  await t.test('authorization code + PKCE for a public client with dpop_jkt, refresh with the same key; another key is refused', async (t) => {
    const client: oauth.Client = { client_id: 'cli', token_endpoint_auth_method: 'none' }
    const keyPair = await oauth.generateKeyPair('ES256')
    const DPoP = oauth.DPoP(client, keyPair)
    const verifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const redirectUri = 'http://127.0.0.1:5999/callback'
    const url = new URL(as.authorization_endpoint ?? '')
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: 'cli',
      redirect_uri: redirectUri,
      scope: 'orders:read',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      dpop_jkt: await DPoP.calculateThumbprint(),
    }).toString()
    const callback = await authorizeAsPerson(new Browser(), url.href, { username: 'alice', password: DEMO_PASSWORD })
    const params = oauth.validateAuthResponse(as, client, callback, state)
    const tokenRes = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, verifier, { DPoP, ...insecure })
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, tokenRes)
    t.equal(tokens.token_type, 'dpop')
    t.type(tokens.refresh_token, 'string')
    t.equal((await oauth.protectedResourceRequest(tokens.access_token, 'GET', secure, undefined, undefined, { DPoP, ...insecure })).status, 200)

    const thief = oauth.DPoP(client, await oauth.generateKeyPair('ES256'))
    const stolen = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token ?? '', { DPoP: thief, ...insecure })
    t.equal(stolen.status, 400, 'a refresh of the bound token with another key is refused')
    t.match(await stolen.json(), { error: 'invalid_grant' })

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token ?? '', { DPoP, ...insecure }),
    )
    t.equal(refreshed.token_type, 'dpop', 'the rightful key refreshes (the refused try did not burn the token)')
    t.equal((await oauth.protectedResourceRequest(refreshed.access_token, 'GET', secure, undefined, undefined, { DPoP, ...insecure })).status, 200)
  })

  await t.test('device grant: the polling proof binds the token', async (t) => {
    const client: oauth.Client = { client_id: 'cli', token_endpoint_auth_method: 'none' }
    const DPoP = oauth.DPoP(client, await oauth.generateKeyPair('EdDSA'))
    const start = await oauth.processDeviceAuthorizationResponse(
      as,
      client,
      await oauth.deviceAuthorizationRequest(as, client, oauth.None(), { scope: 'orders:read' }, insecure),
    )
    await approveDevice(start.verification_uri_complete ?? '')
    const tokens = await oauth.processDeviceCodeResponse(
      as,
      client,
      await oauth.deviceCodeGrantRequest(as, client, oauth.None(), start.device_code, { DPoP, ...insecure }),
    )
    t.equal(tokens.token_type, 'dpop')
    t.equal((await oauth.protectedResourceRequest(tokens.access_token, 'GET', secure, undefined, undefined, { DPoP, ...insecure })).status, 200)
  })

  await t.test('every refusal: 401 with the RFC 9449 challenge, nothing reaches the upstream', async (t) => {
    const key = proofKeyPair('ES256')
    const tokenRes = await fetch(`${bin.url}/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: basic('service', DEMO_SECRET),
        dpop: makeProof(key, { htm: 'POST', htu: `${bin.url}/token` }),
      },
      body: 'grant_type=client_credentials&scope=orders:read',
    })
    const bound = ((await tokenRes.json()) as { access_token: string }).access_token
    const bearerRes = await fetch(`${bin.url}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('service', DEMO_SECRET) },
      body: 'grant_type=client_credentials&scope=orders:read',
    })
    const plain = ((await bearerRes.json()) as { access_token: string }).access_token
    const url = `${bin.url}/secure/1`
    const proof = (o: Partial<Parameters<typeof makeProof>[1]> = {}, k: ProofKeyPair = key): string => makeProof(k, { htu: url, accessToken: bound, ...o })
    const now = Math.floor(Date.now() / 1000)
    const ALGS = 'algs="ES256 ES384 EdDSA Ed25519 RS256 PS256"'

    const refused = async (label: string, headers: Array<[string, string]>, error: string, challenge: RegExp, path = url): Promise<void> => {
      const before = up.seen.length
      const r = await rawGet(path, headers)
      t.equal(r.status, 401, `${label}: 401`)
      t.equal((JSON.parse(r.body) as { error: string }).error, error, `${label}: ${error}`)
      t.match(String(r.headers['www-authenticate']), challenge, `${label}: challenge`)
      t.equal(up.seen.length, before, `${label}: nothing reached the upstream`)
    }
    const dpopError = (error: string): RegExp => new RegExp(`^DPoP realm="bearward", error="${error}", error_description="[^"]+"(, [a-z_]+="[^"]*")*, ${ALGS}`)
    const auth: [string, string] = ['authorization', `DPoP ${bound}`]

    const once = proof()
    t.equal((await rawGet(url, [auth, ['dpop', once]])).status, 200, 'a good proof passes once')
    await refused('replayed proof', [auth, ['dpop', once]], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused('wrong htm', [auth, ['dpop', proof({ htm: 'POST' })]], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused('wrong htu', [auth, ['dpop', proof({ htu: `${bin.url}/secure/2` })]], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused(
      'htu with userinfo (RFC 9449 4.3)',
      [auth, ['dpop', proof({ htu: url.replace('://', '://x@') })]],
      'invalid_dpop_proof',
      dpopError('invalid_dpop_proof'),
    )
    await refused(
      'htu with an empty userinfo',
      [auth, ['dpop', proof({ htu: url.replace('://', '://@') })]],
      'invalid_dpop_proof',
      dpopError('invalid_dpop_proof'),
    )
    await refused('iat five minutes old', [auth, ['dpop', proof({ iat: now - 300 })]], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused('iat five minutes ahead', [auth, ['dpop', proof({ iat: now + 300 })]], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused('wrong ath', [auth, ['dpop', proof({ accessToken: plain })]], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused('a key other than cnf.jkt', [auth, ['dpop', proof({}, proofKeyPair('ES256'))]], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused(
      'a private key in jwk',
      [auth, ['dpop', proof({ header: { jwk: key.privateKey.export({ format: 'jwk' }) } })]],
      'invalid_dpop_proof',
      dpopError('invalid_dpop_proof'),
    )
    await refused('alg none', [auth, ['dpop', proof({ forge: { alg: 'none' } })]], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused('alg HS256', [auth, ['dpop', proof({ forge: { alg: 'HS256', secret: 'guess' } })]], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused('wrong typ', [auth, ['dpop', proof({ header: { typ: 'JWT' } })]], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused('two DPoP headers', [auth, ['dpop', proof()], ['dpop', proof()]], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused('no proof on a required route', [auth], 'invalid_dpop_proof', dpopError('invalid_dpop_proof'))
    await refused('a bearer token on a required route', [['authorization', `Bearer ${plain}`]], 'invalid_token', dpopError('invalid_token'))
    await refused(
      'a bound token as Bearer (route takes both)',
      [['authorization', `Bearer ${bound}`]],
      'invalid_token',
      new RegExp(`^Bearer realm="bearward", error="invalid_token", error_description="[^"]+"(, [a-z_]+="[^"]*")*, DPoP ${ALGS}$`),
      `${bin.url}/orders/1`,
    )
    await refused(
      'an unbound token with the DPoP scheme',
      [
        ['authorization', `DPoP ${plain}`],
        ['dpop', proof({ accessToken: plain })],
      ],
      'invalid_token',
      dpopError('invalid_token'),
    )
    await refused(
      'a proof for the token endpoint replayed at the route',
      [auth, ['dpop', makeProof(key, { htm: 'POST', htu: `${bin.url}/token` })]],
      'invalid_dpop_proof',
      dpopError('invalid_dpop_proof'),
    )

    const bare = await rawGet(url, [])
    t.equal(bare.status, 401)
    t.match(
      String(bare.headers['www-authenticate']),
      new RegExp(`^DPoP realm="bearward", (scope="orders:read", )?${ALGS}`),
      'no credentials on a required route: a DPoP challenge only',
    )
    const both = await rawGet(`${bin.url}/orders/1`, [])
    t.match(String(both.headers['www-authenticate']), new RegExp(`^Bearer realm="bearward".*, DPoP ${ALGS}$`), 'where both are accepted, both challenges')
    t.equal(
      (
        await rawGet(`${bin.url}/orders/1`, [
          ['authorization', `DPoP ${bound}`],
          ['dpop', makeProof(key, { htu: `${bin.url}/orders/1`, accessToken: bound })],
        ])
      ).status,
      200,
      'a route that takes both takes DPoP too',
    )
    t.equal((await rawGet(`${bin.url}/orders/1`, [['authorization', `Bearer ${plain}`]])).status, 200, '... and bearer tokens')
  })
})

t.test('the replay cache is shared by two instances on one redis-server', async (t) => {
  const redis = await startRedis()
  const up = await startUpstream('orders')
  const portA = await freePort()
  const portB = await freePort()
  const cfgDir = await tempConfig('')
  const keyFile = join(cfgDir.dir, 'signing.jwk')
  await writeFile(keyFile, JSON.stringify(await generatePrivateJwk('ES256', 'k1')))
  // One service behind one public URL (the proof's htu), one signing key, one store.
  const yaml = (port: number): Promise<string> =>
    asConfigYaml({ port, upstream: up.url, store: redis.url, routes: [secureRoute(up.url)], override: oneIssuer(portA, keyFile) })
  const fileA = join(cfgDir.dir, 'a.yaml')
  const fileB = join(cfgDir.dir, 'b.yaml')
  await writeFile(fileA, await yaml(portA))
  await writeFile(fileB, await yaml(portB))
  const a = await startBin(fileA)
  const b = await startBin(fileB)
  t.teardown(async () => {
    await a.stop()
    await b.stop()
    await up.close()
    await redis.stop()
    await cfgDir.cleanup()
  })
  // The proof names the public URL (A's); the same bytes are sent to A, then to B.
  const key = proofKeyPair()
  const bound = await tokenFor(a, key)
  const proof = makeProof(key, { htu: `http://127.0.0.1:${portA}/secure/1`, accessToken: bound })
  const headers: Array<[string, string]> = [
    ['authorization', `DPoP ${bound}`],
    ['dpop', proof],
  ]
  t.equal((await rawGet(`${a.url}/secure/1`, headers)).status, 200, 'A accepts the proof')
  const before = up.seen.length
  const atB = await rawGet(`${b.url}/secure/1`, headers)
  t.equal(atB.status, 401, 'B refuses the same proof')
  t.equal((JSON.parse(atB.body) as { error: string }).error, 'invalid_dpop_proof')
  t.equal(up.seen.length, before, 'nothing reached the upstream')
})

/** A DPoP-bound client_credentials token from `bin`, for `key`. */
async function tokenFor(bin: RunningBin, key: ProofKeyPair): Promise<string> {
  const res = await fetch(`${bin.url}/token`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: basic('service', DEMO_SECRET),
      dpop: makeProof(key, { htm: 'POST', htu: `${bin.url}/token` }),
    },
    body: 'grant_type=client_credentials&scope=orders:read',
  })
  if (res.status !== 200) throw new Error(`token: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { access_token: string }).access_token
}
