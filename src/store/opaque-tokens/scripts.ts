/**
 * The Lua scripts of opaque access tokens on Redis; see src/store/redis/scripts.ts for
 * the rules every script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'
/**
 * KEYS[1] = opaque token key {r, exp}; ARGV[1] = now ms. Deletes it; 1 when it was live.
 */
export const DELETE_OPAQUE = script(
  'deleteOpaque',
  `
local exp = redis.call('HGET', KEYS[1], 'exp')
if not exp then return 0 end
redis.call('DEL', KEYS[1])
if tonumber(ARGV[1]) >= tonumber(exp) * 1000 then return 0 end
return 1
`,
)
