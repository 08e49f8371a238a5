/**
 * The Lua scripts of single-use values on Redis; see src/store/redis/scripts.ts for
 * the rules every script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'
/**
 * Set-if-absent judged by the caller's clock (a single-use value such as a
 * DPoP proof's jti). KEYS[1] = key {string: used-until ms}; ARGV[1] = now ms;
 * ARGV[2] = ttl ms. Returns 1 when recorded now, 0 when still in use.
 */
export const USE_ONCE = script(
  'useOnce',
  `
local now = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local used_until = redis.call('GET', KEYS[1])
if used_until and now < tonumber(used_until) then return 0 end
redis.call('SET', KEYS[1], now + ttl, 'PX', math.max(1, ttl))
return 1
`,
)
