/**
 * The Lua scripts of device authorization (RFC 8628) on Redis; see src/store/redis/scripts.ts for
 * the rules every script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'
/**
 * Claim a user code for a device code (RFC 8628 6.1: user codes must be unique while live).
 * KEYS[1] = user-code key {d, e}; ARGV: 1 device hash, 2 expires ms, 3 now ms, 4 ttl ms.
 */
export const CLAIM_USER_CODE = script(
  'claimUserCode',
  `
local e = redis.call('HGET', KEYS[1], 'e')
if e and tonumber(e) > tonumber(ARGV[3]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'd', ARGV[1], 'e', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`,
)

/**
 * pending → approved | denied (RFC 8628 3.3), only while pending and unexpired.
 * KEYS[1] = device key; ARGV: 1 '1' approve / '0' deny, 2 sub, 3 authTime, 4 now ms (an approval's decidedAtMs),
 * 5 the sign-in's amr/acr as JSON.
 */
export const DECIDE_DEVICE = script(
  'decideDevice',
  `
local h = redis.call('HMGET', KEYS[1], 'status', 'expiresAt')
if h[1] ~= 'pending' then return 0 end
if tonumber(ARGV[4]) >= tonumber(h[2]) * 1000 then return 0 end
if ARGV[1] == '1' then
  redis.call('HSET', KEYS[1], 'status', 'approved', 'sub', ARGV[2], 'authTime', ARGV[3], 'decidedAtMs', ARGV[4], 'signIn', ARGV[5])
else
  redis.call('HSET', KEYS[1], 'status', 'denied')
end
return 1
`,
)

/**
 * Device token poll (RFC 8628 3.4, 3.5). KEYS[1] = device key; ARGV: 1 poll time ms
 * (judged against lastPollMs), 2 clock now ms (judged against expiresAt).
 * Polled sooner than intervalSec after lastPollMs → slow_down and interval += 5;
 * approved → consumed (exactly once). Returns {status, HGETALL...} or {'missing'}.
 */
export const POLL_DEVICE = script(
  'pollDevice',
  `
local h = redis.call('HMGET', KEYS[1], 'status', 'expiresAt', 'intervalSec', 'lastPollMs')
if not h[1] or h[1] == 'consumed' then return {'missing'} end
local now = tonumber(ARGV[1])
if tonumber(ARGV[2]) >= tonumber(h[2]) * 1000 then return {'missing'} end
local interval = tonumber(h[3])
local last = tonumber(h[4])
local status = h[1]
if last > 0 and now - last < interval * 1000 then
  redis.call('HSET', KEYS[1], 'lastPollMs', ARGV[1], 'intervalSec', interval + 5)
  status = 'slow_down'
else
  redis.call('HSET', KEYS[1], 'lastPollMs', ARGV[1])
  if status == 'approved' then redis.call('HSET', KEYS[1], 'status', 'consumed') end
end
return {status, redis.call('HGETALL', KEYS[1])}
`,
)
