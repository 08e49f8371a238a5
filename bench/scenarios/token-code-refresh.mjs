// POST /token for the two user grants, against Redis:
// - authorization_code exchange (with PKCE S256): codes are pre-minted straight
//   into Redis with the product's own RedisStore's codes.put (driving /authorize
//   for each would measure the login page instead);
// - refresh_token with rotation: grants pre-minted with RedisStore's grants.create,
//   each refresh token presented once (a second use is reuse and revokes).
// Single-use values are minted per round, sized from the last measured rate.
// Target: report req/s of each, and the Redis commands each request costs
// (counted by the server with MONITOR over 50 requests of each grant).
import { createHash, randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { ROOT, bearwardUnavailable, reserveAddress, startBearward } from '../lib/bearward.mjs'
import { SCOPE, basic, gatewayConfig, writeJson } from '../lib/gateway-config.mjs'
import { runLoad } from '../lib/load.mjs'
import { redisCommandsPerRequest, startRedis } from '../lib/redis.mjs'
import { generateSigningJwk, writeLines } from '../lib/tokens.mjs'
import { FORM, assertJwtAccessToken, pool, postToken } from '../lib/token-endpoint.mjs'
import { notRun, row } from '../lib/rows.mjs'

const TARGET = 'report req/s each'
const CLIENT = 'bench-web'
const SECRET = 'bench-web-secret-0123456789-abcdefghijklmnopqrstuvwxyz'
const REDIRECT = 'http://127.0.0.1:9/callback'
const KEY_PREFIX = 'bwbench:'
const VERIFIER = randomBytes(32).toString('base64url')
const CHALLENGE = createHash('sha256').update(VERIFIER, 'ascii').digest('base64url')
// Single-use values minted for a target's first round: its rate is not known
// yet, and running out makes the figure invalid. Later rounds use 1.2 × the
// best rate seen. Since signing moved to the thread pool both grants run at
// ~11-13k req/s on the 2-core machine; 6,000 ran out.
const FIRST_GUESS_RPS = 20000

export default {
  title: 'token endpoint: authorization_code, refresh rotation (Redis)',
  target: TARGET,
  async setup(ctx) {
    const unavailable = bearwardUnavailable()
    if (unavailable)
      return { targets: [], evaluate: () => [notRun('bearward code exchange', TARGET, unavailable), notRun('bearward refresh rotation', TARGET, unavailable)] }
    const { opts } = ctx
    const redis = ctx.track(await startRedis(ctx.workDir, 'redis-token'))
    const { port, publicUrl } = await reserveAddress()
    const keyFile = writeJson(ctx.file('token-code.jwk'), await generateSigningJwk())
    const { hashSecret } = await import(join(ROOT, 'dist/crypto/secret.js'))
    const config = await gatewayConfig({
      publicUrl,
      keyFile,
      store: { url: redis.url, key_prefix: KEY_PREFIX },
      routes: [],
      extraClients: [
        {
          client_id: CLIENT,
          type: 'confidential',
          secret_hash: await hashSecret(SECRET),
          redirect_uris: [REDIRECT],
          grant_types: ['authorization_code', 'refresh_token'],
          scopes: [SCOPE],
        },
      ],
    })
    // The person the codes and refresh tokens speak for: the token endpoint checks that they still exist.
    config.authorization_server.users = [{ username: 'bench-user', password_hash: await hashSecret(SECRET) }]
    const bw = ctx.track(await startBearward(ctx, { name: 'bearward-token-code', port, config }))

    // The product's own store code, so records are written exactly as it writes them.
    const { createStore } = await import(join(ROOT, 'dist/store/index.js'))
    const { hashToken } = await import(join(ROOT, 'dist/store/hash.js'))
    const { systemClock } = await import(join(ROOT, 'dist/clock.js'))
    const store = await createStore({ kind: 'redis', url: redis.url, cluster: [], keyPrefix: KEY_PREFIX, commandTimeoutMs: 5000 }, { clock: systemClock })
    await store.ping()

    const now = () => Math.floor(Date.now() / 1000)
    const mintCodes = (n) =>
      pool(n, 256, async () => {
        const code = randomBytes(32).toString('base64url')
        const t = now()
        await store.codes.put(
          hashToken(code),
          {
            clientId: CLIENT,
            redirectUri: REDIRECT,
            effectiveRedirectUri: REDIRECT,
            codeChallenge: CHALLENGE,
            codeChallengeMethod: 'S256',
            scope: SCOPE,
            sub: 'bench-user',
            authTime: t,
            nonce: null,
            resource: null,
            expiresAt: t + 600,
          },
          600,
        )
        return code
      })
    const mintRefresh = (n) =>
      pool(n, 256, async () => {
        const refresh = randomBytes(32).toString('base64url')
        const t = now()
        const grant = {
          grantId: randomBytes(16).toString('base64url'),
          clientId: CLIENT,
          sub: 'bench-user',
          scope: SCOPE,
          authTime: t,
          resource: null,
          createdAt: t,
          expiresAt: t + 30 * 86400,
          maxAccessExp: t,
        }
        await store.grants.create(grant, hashToken(refresh))
        return refresh
      })

    const auth = basic(CLIENT, SECRET)
    const codePrefix = `grant_type=authorization_code&redirect_uri=${encodeURIComponent(REDIRECT)}&code_verifier=${VERIFIER}&code=`
    const refreshPrefix = 'grant_type=refresh_token&refresh_token='
    // One of each through the real endpoint first: a failure here is reported as is.
    const [probeCode] = await mintCodes(1)
    const first = await postToken(`${bw.url}/token`, codePrefix + probeCode, auth)
    assertJwtAccessToken(first.access_token)
    if (!first.refresh_token) throw new Error('authorization_code exchange returned no refresh_token for a client with the refresh_token grant')
    const [probeRefresh] = await mintRefresh(1)
    const rotated = await postToken(`${bw.url}/token`, refreshPrefix + probeRefresh, auth)
    if (!rotated.refresh_token || rotated.refresh_token === probeRefresh) throw new Error('refresh did not rotate the refresh token')

    // What each request costs in Redis commands (the bench's own minting is done before counting starts).
    const countCodes = await mintCodes(50)
    const codeCommands = await redisCommandsPerRequest(redis.port, countCodes.length, (i) => postToken(`${bw.url}/token`, codePrefix + countCodes[i], auth))
    const countRefresh = await mintRefresh(50)
    const refreshCommands = await redisCommandsPerRequest(redis.port, countRefresh.length, (i) =>
      postToken(`${bw.url}/token`, refreshPrefix + countRefresh[i], auth),
    )
    process.stderr.write(`[token-code-refresh] Redis commands per request: code ${JSON.stringify(codeCommands)}, refresh ${JSON.stringify(refreshCommands)}\n`)
    const commandsText = (c) =>
      `${c.perRequest.toFixed(2)} Redis commands per request (${Object.entries(c.byCommand)
        .map(([k, v]) => `${k} ${(v / 50).toFixed(1)}`)
        .join(', ')})`

    const singleUseTarget = (id, label, mint, prefix) => {
      let lastRps = FIRST_GUESS_RPS
      return {
        id,
        label,
        profileDir: bw.profileDir,
        async measure(round) {
          const count = Math.ceil(lastRps * (opts.warmupSec + opts.durationSec) * 1.5)
          const values = await mint(count)
          const file = writeLines(ctx.file(`${id}.round${round}.values`), values)
          const r = await runLoad(
            {
              url: `${bw.url}/token`,
              method: 'POST',
              headers: { authorization: auth, 'content-type': FORM },
              connections: opts.connections,
              warmupSec: opts.warmupSec,
              durationSec: opts.durationSec,
              serverPids: [bw.pid],
              rotate: { file, as: 'body', prefix, once: true },
            },
            ctx.workDir,
          )
          lastRps = Math.max(lastRps, r.rps * 1.2)
          return { ...r, minted: count }
        },
      }
    }
    return {
      targets: [
        singleUseTarget('code', 'bearward code exchange', mintCodes, codePrefix),
        singleUseTarget('refresh', 'bearward refresh rotation', mintRefresh, refreshPrefix),
      ],
      teardown: () => store.close(),
      extra: { redisCommands: { code: codeCommands, refresh: refreshCommands } },
      evaluate: (a) => [
        row(a.code, { subject: 'bearward authorization_code exchange (PKCE)', target: TARGET, ratio: commandsText(codeCommands) }),
        row(a.refresh, { subject: 'bearward refresh_token rotation', target: TARGET, ratio: commandsText(refreshCommands) }),
      ],
    }
  },
}
