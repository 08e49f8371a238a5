/**
 * Issue #31, "No passthrough at the gateway": with `upstream_token: exchange`
 * the upstream gets a short-lived access token bearward signs for it, with
 * `upstream_token: assertion` a signed identity assertion bound to the
 * request; never the client's own token. The upstream here is what a real
 * one would be: it checks what it gets with jose against bearward's
 * /jwks.json, and refuses a forged token, a replayed assertion and an
 * assertion made for another request.
 */
import t from 'tap'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import { createRemoteJWKSet, errors as joseErrors, exportJWK, generateKeyPair, jwtVerify, SignJWT, type JWTPayload } from 'jose'
import { asConfig } from '../helpers/as-config.js'
import { runCli, startBinOrCleanUp, tempConfig, type RunningBin } from '../helpers/bin.js'
import { eventually, freePort } from '../helpers/http.js'
import { serviceToken } from '../helpers/store-pair.js'
import { startUpstream } from '../helpers/upstream.js'

interface Verdict {
  ok: boolean
  why?: string
  claims?: JWTPayload
  typ?: string
}

t.test('upstream tokens and assertions signed by bearward, verified by the upstream against its JWKS', async (t) => {
  let jwks: ReturnType<typeof createRemoteJWKSet> | null = null
  let issuer = ''
  const seenJtis = new Set<string>()

  /** The upstream's own check of what it was given: the signature against bearward's JWKS, then the claims. */
  const check = async (req: IncomingMessage): Promise<Verdict> => {
    if (jwks === null) return { ok: false, why: 'not ready' }
    const upstreamOrigin = `http://${req.headers.host}`
    const assertion = req.headers['x-bearward-assertion']
    try {
      if (assertion !== undefined) {
        if (typeof assertion !== 'string') return { ok: false, why: 'several assertions' }
        const { payload, protectedHeader } = await jwtVerify(assertion, jwks, {
          issuer,
          audience: upstreamOrigin,
          typ: 'bearward-assertion+jwt',
          maxTokenAge: '30s',
        })
        const path = (req.url ?? '').split('?')[0]
        if (payload.htm !== req.method || payload.htu !== `${upstreamOrigin}${path}`) return { ok: false, why: 'another request' }
        if (typeof payload.jti !== 'string' || seenJtis.has(payload.jti)) return { ok: false, why: 'replayed' }
        seenJtis.add(payload.jti)
        return { ok: true, claims: payload, typ: protectedHeader.typ }
      }
      const auth = req.headers.authorization ?? ''
      if (!auth.startsWith('Bearer ')) return { ok: false, why: 'no token' }
      const { payload, protectedHeader } = await jwtVerify(auth.slice('Bearer '.length), jwks, {
        issuer,
        audience: upstreamOrigin,
        typ: 'bearward-upstream+jwt',
      })
      return { ok: true, claims: payload, typ: protectedHeader.typ }
    } catch (err) {
      return { ok: false, why: err instanceof joseErrors.JOSEError ? err.code : String(err) }
    }
  }

  const verdicts: Verdict[] = []
  const up = await startUpstream('orders', (req, res) => {
    void check(req).then((v) => {
      verdicts.push(v)
      const body = JSON.stringify(v)
      res.writeHead(v.ok ? 200 : 401, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
      res.end(body)
    })
  })
  // WebSocket handshakes: record what arrives, accept, close.
  const upgrades: IncomingMessage[] = []
  up.server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    upgrades.push(req)
    socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n')
  })

  const port = await freePort()
  const config = await asConfig({
    port,
    upstream: up.url,
    routes: [
      {
        name: 'short',
        match: { path: '/short' },
        upstream: up.url,
        scopes: { GET: ['orders:read'] },
        upstream_token: 'exchange',
        upstream_token_lifetime: '2s',
      },
      {
        name: 'signed',
        match: { path: '/signed' },
        upstream: `${up.url}/base`,
        scopes: { GET: ['orders:read'], POST: ['orders:write'] },
        upstream_token: 'assertion',
        upstream_assertion: { header: 'X-Bearward-Assertion' },
      },
    ],
  })
  // The demo's `orders` route passes an exchanged token upstream too.
  const orders = config.routes[0]!
  orders.upstream_token = 'exchange'
  const cfg = await tempConfig(config)
  const bin: RunningBin = await startBinOrCleanUp(cfg.file, async () => {
    await up.close()
    await cfg.cleanup()
  })
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  issuer = bin.url
  jwks = createRemoteJWKSet(new URL(`${bin.url}/jwks.json`))
  const token = await serviceToken(bin)

  const call = (path: string, headers: Record<string, string> = {}, init: RequestInit = {}): Promise<Response> =>
    fetch(`${bin.url}${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...headers }, signal: AbortSignal.timeout(10_000) })
  const last = (): (typeof up.seen)[number] => up.seen[up.seen.length - 1] as (typeof up.seen)[number]

  await t.test('exchange: the upstream gets a token of its own, never the client’s', async (t) => {
    const res = await call('/orders/1', { 'x-bearward-assertion': 'forged', dpop: 'not-a-proof' })
    const v = (await res.json()) as Verdict
    t.equal(res.status, 200, `the upstream verified it: ${v.why ?? ''}`)
    const seen = last()
    t.not(seen.headers.authorization, `Bearer ${token}`, 'the client’s token never arrives')
    t.notOk(
      seen.rawHeaders.some((h) => h.includes(token)),
      'not in any header',
    )
    t.equal(seen.headers.dpop, undefined, 'nor its DPoP header')
    t.equal(seen.headers['x-bearward-assertion'], undefined, 'a client-sent assertion header is stripped')
    t.equal(v.typ, 'bearward-upstream+jwt', 'a typ of its own: bearward never takes it for one of its access tokens')
    t.match(v.claims, { iss: bin.url, sub: 'service', aud: up.url, client_id: 'service', scope: 'orders:read', act: { sub: 'service' } })
    const c = v.claims as JWTPayload
    t.equal((c.exp ?? 0) - (c.iat ?? 0), 60, 'lives 60 s by default')
    t.type(c.jti, 'string')
  })

  await t.test('exchange: one signature per token and lifetime (the cache), renewed before expiry', async (t) => {
    const a = (await (await call('/orders/2')).json()) as Verdict
    const b = (await (await call('/orders/3')).json()) as Verdict
    t.ok(a.ok && b.ok)
    t.equal(a.claims?.jti, b.claims?.jti, 'two requests with one token: one minted token')
    const first = (await (await call('/short/1')).json()) as Verdict
    t.ok(first.ok, first.why ?? '')
    t.equal((first.claims?.exp ?? 0) - (first.claims?.iat ?? 0), 2, 'upstream_token_lifetime')
    t.not(first.claims?.jti, a.claims?.jti, 'each route (audience, scopes) has its own')
    let renewed: Verdict | undefined
    t.ok(
      await eventually(
        async () => {
          renewed = (await (await call('/short/2')).json()) as Verdict
          return renewed.ok === true && renewed.claims?.jti !== first.claims?.jti
        },
        5000,
        100,
      ),
      'a new token once the cached one nears its exp',
    )
    t.ok((renewed?.claims?.exp ?? 0) > (first.claims?.exp ?? 0))
  })

  await t.test('exchange: the upstream refuses a token bearward did not sign', async (t) => {
    const good = last().headers.authorization ?? ''
    const direct = (auth: string): Promise<Response> => fetch(`${up.url}/orders/1`, { headers: { authorization: auth }, signal: AbortSignal.timeout(10_000) })
    t.equal((await direct(good)).status, 200, 'the real one passes when sent directly')
    const { kid } = JSON.parse(Buffer.from(good.slice(7).split('.')[0] ?? '', 'base64url').toString('utf8')) as { kid: string; alg: string }
    const jwksKeys = ((await (await fetch(`${bin.url}/jwks.json`)).json()) as { keys: Array<{ kid: string; alg: string }> }).keys
    const alg = jwksKeys.find((k) => k.kid === kid)?.alg ?? 'ES256'
    const other = await generateKeyPair(alg, { extractable: true })
    t.ok(await exportJWK(other.publicKey))
    const forged = await new SignJWT({
      ...(JSON.parse(Buffer.from(good.split('.')[1] ?? '', 'base64url').toString('utf8')) as JWTPayload),
      scope: 'orders:read orders:write',
    })
      .setProtectedHeader({ alg, kid, typ: 'bearward-upstream+jwt' })
      .sign(other.privateKey)
    const refused = await direct(`Bearer ${forged}`)
    t.equal(refused.status, 401)
    t.equal(((await refused.json()) as Verdict).why, 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED', 'the same kid, another key: refused')
  })

  await t.test('assertion: a signed identity bound to this request, the client’s token never forwarded', async (t) => {
    const res = await call('/signed/items?page=2', { 'X-Bearward-Assertion': 'forged', X_Bearward_Assertion: 'forged too' })
    const v = (await res.json()) as Verdict
    t.equal(res.status, 200, `the upstream verified it: ${v.why ?? ''}`)
    const seen = last()
    t.equal(seen.url, '/base/signed/items?page=2')
    t.equal(seen.headers.authorization, undefined, 'no Authorization at all')
    t.notOk(
      seen.rawHeaders.some((h) => h.includes(token)),
      'the client’s token is in no header',
    )
    t.equal(seen.rawHeaders.filter((h) => h.toLowerCase().replaceAll('_', '-') === 'x-bearward-assertion').length, 1, 'only bearward’s assertion arrives')
    t.equal(v.typ, 'bearward-assertion+jwt')
    t.match(v.claims, { iss: bin.url, sub: 'service', aud: up.url, client_id: 'service', scope: 'orders:read', htm: 'GET', htu: `${up.url}/base/signed/items` })
    t.equal((v.claims?.exp ?? 0) - (v.claims?.iat ?? 0), 30, 'lives 30 s by default')
    const again = (await (await call('/signed/items?page=2')).json()) as Verdict
    t.ok(again.ok)
    t.not(again.claims?.jti, v.claims?.jti, 'signed per request: a new jti each time')

    const assertion = seen.headers['x-bearward-assertion'] as string
    const direct = (path: string, method = 'GET'): Promise<Response> =>
      fetch(`${up.url}${path}`, { method, headers: { 'x-bearward-assertion': assertion }, signal: AbortSignal.timeout(10_000) })
    t.equal(((await (await direct('/base/signed/items')).json()) as Verdict).why, 'replayed', 'the same assertion again: refused')
    t.equal(((await (await direct('/base/signed/other')).json()) as Verdict).why, 'another request', 'for another path: refused')
    t.equal(((await (await direct('/base/signed/items', 'DELETE')).json()) as Verdict).why, 'another request', 'for another method: refused')
  })

  await t.test('refusals at the gateway reach nothing upstream', async (t) => {
    const before = up.seen.length
    const post = await call('/signed/items', {}, { method: 'POST', body: 'x' })
    t.equal(post.status, 403, 'orders:write is not in the token')
    const bad = await fetch(`${bin.url}/orders/1`, { headers: { authorization: 'Bearer not.a.token' } })
    t.equal(bad.status, 401)
    t.equal(up.seen.length, before, 'nothing forwarded')
  })

  await t.test('a WebSocket handshake carries the exchanged token too', async (t) => {
    const req = httpRequest(`${bin.url}/orders/ws`, {
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        authorization: `Bearer ${token}`,
      },
    })
    const upgraded = new Promise<Socket>((resolve, reject) => {
      req.on('upgrade', (_res, socket: Socket) => resolve(socket))
      req.on('response', (res) => reject(new Error(`no upgrade: ${res.statusCode}`)))
      req.on('error', reject)
    })
    req.end()
    ;(await upgraded).destroy()
    const hs = upgrades[upgrades.length - 1]
    const auth = hs?.headers.authorization ?? ''
    t.not(auth, `Bearer ${token}`, 'not the client’s token')
    const { payload } = await jwtVerify(auth.slice(7), jwks as ReturnType<typeof createRemoteJWKSet>, {
      issuer: bin.url,
      audience: up.url,
      typ: 'bearward-upstream+jwt',
    })
    t.match(payload, { sub: 'service', act: { sub: 'service' } })
  })
})

t.test('bearward check-config refuses a signed mode it cannot honour, at its place in the file', async (t) => {
  // No authorization_server to sign with; forward_authorization beside a signed mode.
  const bad = await tempConfig(`listen: 127.0.0.1:0
admin_listen: 127.0.0.1:0
issuers:
  - { id: corp, issuer: https://idp.example.com, jwks_uri: https://idp.example.com/jwks.json }
routes:
  - name: orders
    match: { path: /orders }
    upstream: http://127.0.0.1:3000
    issuers: [corp]
    forward_authorization: true
    upstream_token: exchange
`)
  t.teardown(() => bad.cleanup())
  const r = await runCli(['check-config', '-c', bad.file])
  t.equal(r.code, 1)
  const file = bad.file.replace(/[.]/g, '\\.')
  t.match(r.stderr, new RegExp(`${file}:11:21: routes\\[0\\]\\.upstream_token: .*no \`authorization_server\``), 'no keys to sign with')
  t.match(r.stderr, new RegExp(`${file}:10:28: routes\\[0\\]\\.forward_authorization: .*never forwarded`), 'forward_authorization beside it')
})
