// DPoP route (RFC 9449): each request carries `Authorization: DPoP <token>`
// and a fresh proof (its own jti, iat, ath), as clients send them, so every
// request costs bearward one proof signature check (ES256) and one
// replay-cache entry besides the cached token validation. Measured against
// the bearer JWT route of the same bearward process in the same rounds.
//
// Proofs are signed before each measurement (signing ~25k ES256 proofs in
// the load generator while it runs would take the CPU the server needs on a
// 2-core machine); they are used once each, within the proof window. Both
// targets walk their values (the load generator rebuilds each request), so
// the generator's per-request cost is the same on both sides.
import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto'
import { bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { SCOPE, gatewayConfig, route, writeJson } from '../lib/gateway-config.mjs'
import { checkWithJose, generateSigningJwk, mintJwts, writeLines } from '../lib/tokens.mjs'
import { notRun, pairedRatio, row } from '../lib/rows.mjs'

const TARGET = '≥ 0.6 × the bearer JWT route'
const PATH = '/api/items'
/** Tokens (one client key each), as many as the default connections. */
const CLIENTS = 50
/** Proofs signed per second of load (warm-up and measurement), generously above what the DPoP route serves. */
const PROOFS_PER_SEC = 12_000

const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url')

function thumbprint(jwk) {
  return createHash('sha256')
    .update(JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }))
    .digest('base64url')
}

/** `count` lines `<token> <proof>`, round-robin over the clients, every proof fresh. */
function proofLines(clients, htu, count) {
  const iat = Math.floor(Date.now() / 1000)
  const prefix = randomBytes(6).toString('base64url')
  const out = new Array(count)
  for (let i = 0; i < count; i++) {
    const c = clients[i % clients.length]
    const input = `${c.header}.${b64({ jti: `${prefix}-${i}`, htm: 'GET', htu, iat, ath: c.ath })}`
    const sig = sign('sha256', Buffer.from(input), { key: c.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')
    out[i] = `${c.token} ${input}.${sig}`
  }
  return out
}

export default {
  title: 'DPoP route, a fresh proof per request',
  target: TARGET,
  async setup(ctx) {
    const unavailable = bearwardUnavailable()
    if (unavailable) return { skip: unavailable }
    const up = await ctx.upstream()
    const { port, publicUrl } = await reserveAddress()
    const jwk = await generateSigningJwk()
    const keyFile = writeJson(ctx.file('dpop.jwk'), jwk)
    const keys = Array.from({ length: CLIENTS }, () => {
      const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' })
      const pub = pair.publicKey.export({ format: 'jwk' })
      return { privateKey: pair.privateKey, jkt: thumbprint(pub), header: b64({ typ: 'dpop+jwt', alg: 'ES256', jwk: pub }) }
    })
    const bound = mintJwts({
      privateJwk: jwk,
      issuer: publicUrl,
      audience: publicUrl,
      scope: SCOPE,
      count: CLIENTS,
      extra: (i) => ({ cnf: { jkt: keys[i].jkt } }),
    })
    const bearer = mintJwts({ privateJwk: jwk, issuer: publicUrl, audience: publicUrl, scope: SCOPE, count: CLIENTS })
    await checkWithJose(bound[0], jwk, publicUrl, publicUrl)
    const clients = keys.map((k, i) => ({ ...k, token: bound[i], ath: createHash('sha256').update(bound[i]).digest('base64url') }))
    const bearerFile = writeLines(ctx.file('dpop-bearer.tokens'), bearer)

    const config = await gatewayConfig({ publicUrl, keyFile, routes: [route('api', '/api', up.url, { token: 'jwt', scopes: { GET: [SCOPE] } })] })
    const bw = ctx.track(await startBearward(ctx, { name: 'bearward-dpop', port, config }))
    const htu = publicUrl + PATH
    const seconds = ctx.opts.warmupSec + ctx.opts.durationSec
    const targets = [
      ctx.loadTarget({ id: 'bearer', label: 'bearer JWT route', url: bw.url + PATH, server: bw, rotate: { file: bearerFile, as: 'bearer' } }),
      ctx.loadTarget({
        id: 'dpop',
        label: 'DPoP route, fresh proof per request',
        url: bw.url + PATH,
        server: bw,
        // Signed just before this measurement, so every proof is within the iat window.
        rotate: (round) => ({
          file: writeLines(ctx.file(`dpop-${round}.proofs`), proofLines(clients, htu, Math.ceil(PROOFS_PER_SEC * seconds))),
          as: 'dpop',
          once: true,
        }),
      }),
    ]
    return {
      targets,
      evaluate(a) {
        if (!a.dpop || !a.bearer) return [notRun('bearward', TARGET, 'no measurement')]
        const ratio = pairedRatio(a.dpop, a.bearer, 'bearer JWT route')
        return [
          row(a.bearer, { subject: 'bearward, bearer JWT route (baseline)' }),
          row(a.dpop, {
            subject: 'bearward, DPoP route (ES256 proof per request)',
            target: TARGET,
            ratio: ratio.text,
            checks: [{ ok: ratio.value >= 0.6, what: '≥ 0.6 × bearer' }],
          }),
        ]
      },
    }
  },
}
