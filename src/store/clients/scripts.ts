/**
 * The Lua scripts of registered clients (RFC 7591) on Redis; see src/store/redis/scripts.ts for
 * the rules every script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'
/**
 * A registered client was used: move its expiry later, never earlier, and
 * only while it exists (a deleted client stays deleted).
 * KEYS[1] = client key {r: record JSON, e: expires ms}; ARGV[1] = new expiry ms;
 * ARGV[2] = ttl ms; ARGV[3] = now ms (a client past its expiry stays forgotten).
 * Returns 1 when moved, 0 otherwise.
 */
export const TOUCH_CLIENT = script(
  'touchClient',
  `
local e = redis.call('HGET', KEYS[1], 'e')
if not e then return 0 end
if tonumber(ARGV[3]) >= tonumber(e) then return 0 end
if tonumber(ARGV[1]) <= tonumber(e) then return 0 end
redis.call('HSET', KEYS[1], 'e', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`,
)

/**
 * Take a seat among the live registered clients, if one is free.
 * KEYS[1] = the clients index, a sorted set (client id, score = expiry ms):
 * one key, so the count and the add are one step on every topology.
 * ARGV: 1 now ms, 2 the most live clients, 3 client id, 4 its expiry ms.
 * Forgets the expired entries first. Returns {1, live} when seated, or
 * {0, live, expiry ms of the first live client} when full.
 */
export const SEAT_CLIENT = script(
  'seatClient',
  `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local live = redis.call('ZCARD', KEYS[1])
if live >= tonumber(ARGV[2]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, live, tonumber(first[2] or 0)}
end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
return {1, live + 1, 0}
`,
)
