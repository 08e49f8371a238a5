/**
 * What one POST /token costs in Redis commands, counted by the server itself
 * (MONITOR on a real redis-server): client_credentials with
 * client_secret_basic, the authorization_code exchange and refresh rotation,
 * with JWT access tokens. A change that adds a command to one of these shows
 * here. Commands run inside a Lua script are not counted (they cost no
 * round trip); the store's heartbeat PINGs are left out.
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { Redis } from 'ioredis'
import { ManualClock } from '../../src/clock.js'
import * as scripts from '../../src/store/redis/all-scripts.js'
import { RedisStore } from '../../src/store/redis.js'
import { startRedis } from '../helpers/redis.js'
import { basic, codeParams, mintCode, startAs, token, tokensFor, type Harness } from '../helpers/as-back.js'
import { eventually } from '../helpers/http.js'

/** EVALSHA shows as the script's name. */
const SCRIPT_NAMES = new Map<string, string>(
  Object.values(scripts)
    .filter((s): s is scripts.LuaScript => typeof s === 'object' && s !== null && 'sha' in s && 'name' in s)
    .map((s) => [s.sha, s.name]),
)

t.test('Redis commands per /token request', async (t) => {
  const redis = await startRedis({ own: true })
  const h: Harness = await startAs({
    clock: new ManualClock(Date.now()),
    store: (clock) => new RedisStore({ url: redis.url, keyPrefix: redis.prefix, clock }),
  })
  // monitor() opens a connection of its own beside the client it is called on.
  const marker = new Redis(redis.url)
  const monitor = await marker.monitor()
  // Teardowns run in the order added: the watching connections and the server's store before redis-server.
  t.teardown(async () => {
    monitor.disconnect()
    marker.disconnect()
    await h.close()
    await redis.stop()
  })
  const seen: string[] = []
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const name = String(args[0]).toLowerCase()
    if (source === 'lua' || name === 'ping') return
    seen.push(name === 'evalsha' || name === 'eval' ? (SCRIPT_NAMES.get(String(args[1])) ?? `${name} ?`) : name === 'echo' ? `echo ${args[1]}` : name)
  })
  /** The commands the server ran while `fn` made its request (between two ECHO markers on another connection). */
  const commandsOf = async (label: string, fn: () => Promise<void>): Promise<string[]> => {
    await marker.echo(`start ${label}`)
    await fn()
    await marker.echo(`end ${label}`)
    t.ok(await eventually(() => seen.includes(`echo end ${label}`)), `MONITOR saw the end of ${label}`)
    return seen.slice(seen.indexOf(`echo start ${label}`) + 1, seen.indexOf(`echo end ${label}`))
  }

  // Once each first, so every script is loaded (a first EVALSHA answers NOSCRIPT and is sent again as EVAL).
  t.equal((await token(h, 'service', { grant_type: 'client_credentials' })).status, 200)
  t.equal((await token(h, 'web', codeParams(await mintCode(h)))).status, 200)
  t.equal((await token(h, 'web', { grant_type: 'refresh_token', refresh_token: String((await tokensFor(h)).refresh_token) })).status, 200)

  t.test('client_credentials, client_secret_basic: one command, and no failure counter written', async (t) => {
    const commands = await commandsOf('client_credentials', async () => {
      const r = await token(h, 'service', { grant_type: 'client_credentials' })
      t.equal(r.status, 200)
      t.type(r.json?.access_token, 'string')
    })
    t.same(commands, ['hitWindows'], 'both failure windows (pair and address) read in one command')
  })

  t.test('authorization_code exchange: six commands', async (t) => {
    const m = await mintCode(h)
    const commands = await commandsOf('code', async () => {
      const r = await token(h, 'web', codeParams(m))
      t.equal(r.status, 200)
      t.type(r.json?.refresh_token, 'string')
    })
    // The grant records the access token's expiry when it is created: no noteAccessExp after it.
    // putGrant: the family and its client's index (the admin API's grants of a client) in one script.
    t.same(commands, ['hitWindows', 'takeCode', 'linkCodeGrant', 'noteAllowance', 'set', 'putGrant'])
  })

  t.test('refresh rotation: six commands, the rotation one atomic script', async (t) => {
    const first = await tokensFor(h)
    const refresh = String(first.refresh_token)
    let accessToken = ''
    const commands = await commandsOf('refresh', async () => {
      const r = await token(h, 'web', { grant_type: 'refresh_token', refresh_token: refresh })
      t.equal(r.status, 200)
      t.not(r.json?.refresh_token, refresh)
      accessToken = String(r.json?.access_token)
    })
    // findRefresh (get, hmget) found the grant: rotateRefresh does not look its id up again, and
    // records the new access token's expiry itself (no noteAccessExp after it).
    t.same(commands, ['hitWindows', 'get', 'hmget', 'noteAllowance', 'set', 'rotateRefresh'])
    const claims = decodeJwt(accessToken)
    const grant = await h.store.grants.get(String(claims.grant_id))
    t.ok(grant !== null && grant.maxAccessExp >= Number(claims.exp), 'the family outlives the new access token (a revocation covers it)')
    const again = await token(h, 'web', { grant_type: 'refresh_token', refresh_token: refresh })
    t.equal(again.json?.error, 'invalid_grant', 'the replaced token is refused')
  })

  t.test('a wrong secret still counts, and the one read still locks', async (t) => {
    const wrong = { authorization: basic('service', 'not-the-secret') }
    for (let i = 0; i < 5; i++) t.equal((await token(h, 'service', { grant_type: 'client_credentials' }, wrong)).status, 401)
    const locked = await token(h, 'service', { grant_type: 'client_credentials' }, wrong)
    t.equal(locked.status, 429, 'past client_auth_max_failures: refused without a verification')
    t.equal(locked.json?.error, 'invalid_client')
  })
})
