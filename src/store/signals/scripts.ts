/**
 * The Lua scripts of the Shared Signals receiver's records on Redis; see
 * src/store/redis/scripts.ts for the rules every script follows.
 */
import { script } from '../redis/scripts.js'

/**
 * Take or renew a lease judged by the caller's clock. KEYS[1] = lease
 * {hash: holder, until ms}; ARGV[1] = holder; ARGV[2] = now ms; ARGV[3] = ttl ms.
 * Returns 1 when `holder` has the lease now, 0 when another holds it.
 */
export const TAKE_LEASE = script(
  'takeLease',
  `
local now = tonumber(ARGV[2])
local ttl = tonumber(ARGV[3])
local holder = redis.call('HGET', KEYS[1], 'holder')
local untilMs = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
if holder and holder ~= ARGV[1] and now < untilMs then return 0 end
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'until', now + ttl)
redis.call('PEXPIRE', KEYS[1], math.max(1, ttl))
return 1
`,
)

/** Release a lease held by ARGV[1]. KEYS[1] = lease. Returns 1 when released. */
export const RELEASE_LEASE = script(
  'releaseLease',
  `
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`,
)

/**
 * Store a receiver's stream unless a new one would pass the cap. KEYS[1] =
 * streams hash; ARGV[1] = client id; ARGV[2] = stream JSON; ARGV[3] = max.
 * Returns 1 when stored, 0 when refused.
 */
export const PUT_STREAM = script(
  'putStream',
  `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`,
)
