/**
 * The Lua scripts of authorization codes on Redis; see src/store/redis/scripts.ts for
 * the rules every script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'
/**
 * Authorization code Issued → Used (RFC 6749 4.1.2: single use).
 * KEYS[1] = code hash key {r, st, gid, exp, dl}; ARGV[1] = now ms.
 * Returns {'missing'} | {'used', record, grantId or ''} | {'taken', record}.
 */
export const TAKE_CODE = script(
  'takeCode',
  `
local h = redis.call('HMGET', KEYS[1], 'r', 'st', 'gid', 'exp', 'dl')
if not h[1] then return {'missing'} end
local now = tonumber(ARGV[1])
if now >= tonumber(h[5]) then return {'missing'} end
if h[2] == 'u' then return {'used', h[1], h[3] or ''} end
if now >= tonumber(h[4]) * 1000 then return {'missing'} end
redis.call('HSET', KEYS[1], 'st', 'u')
return {'taken', h[1]}
`,
)

/** KEYS[1] = code key; ARGV[1] = grant id. Only a Used code gets linked. */
export const LINK_CODE_GRANT = script(
  'linkCodeGrant',
  `
if redis.call('HGET', KEYS[1], 'st') == 'u' then
  redis.call('HSET', KEYS[1], 'gid', ARGV[1])
  return 1
end
return 0
`,
)
