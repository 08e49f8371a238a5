/**
 * The Lua scripts of browser sessions on Redis; see src/store/redis/scripts.ts for the rules every
 * script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'

/**
 * Index a session. KEYS[1] = an index sorted set (session id, score = expires ms): `usess:{sub}` or
 * `idpsess:{provider sid}:provider`. ARGV: 1 session id, 2 expires ms, 3 now ms, 4 the bound.
 * Drops expired members; over the bound, pops the members soonest to expire and returns their ids
 * (the caller ends those sessions, so every live session stays findable). The key lives as long
 * as its latest member.
 */
export const INDEX_SESSION = script(
  'indexSession',
  `
local now = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local evicted = {}
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
if over > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[1], over)
  for i = 1, #popped, 2 do table.insert(evicted, popped[i]) end
end
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(last[2]) - now)) end
return evicted
`,
)

/**
 * Take an index whole. KEYS[1] = index sorted set; ARGV[1] = now ms. Returns the ids of members
 * not yet expired and deletes the key, so of two concurrent ends one gets them.
 */
export const TAKE_SESSION_INDEX = script(
  'takeSessionIndex',
  `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. ARGV[1], '+inf')
redis.call('DEL', KEYS[1])
return ids
`,
)

/**
 * Take a session. KEYS[1] = `sess:{h}` string {v, e}; KEYS[2] = `sessrp:{h}` set of client ids
 * (same tag). Returns {record JSON or false, client ids...} and deletes both.
 */
export const TAKE_SESSION = script(
  'takeSession',
  `
local raw = redis.call('GET', KEYS[1])
local clients = redis.call('SMEMBERS', KEYS[2])
redis.call('DEL', KEYS[1], KEYS[2])
return { raw or false, unpack(clients) }
`,
)

/**
 * Remember a client of a live session. KEYS[1] = `sess:{h}`; KEYS[2] = `sessrp:{h}`. ARGV: 1 client
 * id, 2 the bound. Adds the client while under the bound; the set lives as long as the session key.
 */
export const NOTE_SESSION_CLIENT = script(
  'noteSessionClient',
  `
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then return 0 end
if redis.call('SCARD', KEYS[2]) < tonumber(ARGV[2]) then redis.call('SADD', KEYS[2], ARGV[1]) end
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
`,
)
