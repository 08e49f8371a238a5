// POST /token, grant_type=client_credentials, HTTP Basic, ES256 JWT access
// tokens: bearward's AS against node-oidc-provider configured alike (same key
// type, same client authentication, JWT access tokens, in-memory storage).
// Target: ≥ 2 × oidc-provider.
import { bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { CLIENT_ID, CLIENT_SECRET, SCOPE, basic, gatewayConfig, writeJson } from '../lib/gateway-config.mjs'
import { generateSigningJwk } from '../lib/tokens.mjs'
import { FORM, assertJwtAccessToken, postToken } from '../lib/token-endpoint.mjs'
import { notRun, pairedRatio, row } from '../lib/rows.mjs'

const TARGET = '≥ 2 × oidc-provider'

const BODY = `grant_type=client_credentials&scope=${encodeURIComponent(SCOPE)}`

export default {
  title: 'token endpoint: client_credentials',
  target: TARGET,
  async setup(ctx) {
    const jwk = await generateSigningJwk()
    const keyFile = writeJson(ctx.file('token-cc.jwk'), jwk)
    const audience = 'http://api.bench.test'
    const peer = await ctx.baseline('oidc-provider-peer.mjs', ['http://127.0.0.1/oidc-provider', keyFile, CLIENT_ID, CLIENT_SECRET, audience, SCOPE])
    const headers = { authorization: basic(), 'content-type': FORM }
    // Check the answer is what we mean to measure before measuring it.
    assertJwtAccessToken((await postToken(`${peer.url}/token`, BODY, headers.authorization)).access_token)
    const targets = [ctx.loadTarget({ id: 'peer', label: 'oidc-provider', url: `${peer.url}/token`, server: peer, method: 'POST', headers, body: BODY })]

    const unavailable = bearwardUnavailable()
    if (!unavailable) {
      const { port, publicUrl } = await reserveAddress()
      const config = await gatewayConfig({ publicUrl, keyFile, routes: [] })
      const bw = ctx.track(await startBearward(ctx, { name: 'bearward-token-cc', port, config }))
      assertJwtAccessToken((await postToken(`${bw.url}/token`, BODY, headers.authorization)).access_token)
      targets.push(ctx.loadTarget({ id: 'bearward', label: 'bearward /token', url: `${bw.url}/token`, method: 'POST', headers, body: BODY, server: bw }))
    }
    return {
      targets,
      evaluate(a) {
        const rows = [row(a.peer, { subject: 'node-oidc-provider (peer)' })]
        if (!a.bearward) return [...rows, notRun('bearward', TARGET, unavailable)]
        const r = pairedRatio(a.bearward, a.peer, 'oidc-provider')
        rows.push(row(a.bearward, { subject: 'bearward', target: TARGET, ratio: r.text, checks: [{ ok: r.value >= 2, what: '≥ 2 × oidc-provider' }] }))
        return rows
      },
    }
  },
}
