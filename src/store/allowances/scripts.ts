/**
 * The Lua scripts of what a person allowed (the account page) on Redis; see src/store/redis/scripts.ts for
 * the rules every script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'
/**
 * Note an allowance (the account page). KEYS[1] = `apps:{sub}` hash (client id → JSON
 * {s: scopes, at, e: until ms}); KEYS[2] = `ugrants:{sub}:client` sorted set (grant id, score =
 * until s); KEYS[3] = `withdrawn:{sub}:client` hash {at: ms of the latest withdrawal, e: ms it is
 * remembered until}. All carry the sub's
 * hash tag. ARGV: 1 client id, 2 scopes JSON array, 3 at (s), 4 grant id or '', 5 until (s), 6 now ms,
 * 7 ms the authorization was given or ''. Scopes are merged, `at` and the lifetimes only raised.
 * Returns 0, noting nothing, when the client was withdrawn at or after ARGV[7]; 1 otherwise.
 */
export const NOTE_ALLOWANCE = script(
  'noteAllowance',
  `
local now = tonumber(ARGV[6])
if ARGV[7] ~= '' then
  local w = redis.call('HMGET', KEYS[3], 'at', 'e')
  if w[1] and tonumber(w[2]) > now and tonumber(w[1]) >= tonumber(ARGV[7]) then return 0 end
end
local until_ms = tonumber(ARGV[5]) * 1000
local scopes = {}
local seen = {}
local at = tonumber(ARGV[3])
local e = until_ms
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  local c = cjson.decode(cur)
  if tonumber(c.e) > now then
    if type(c.s) == 'table' then
      for _, v in ipairs(c.s) do if not seen[v] then seen[v] = true; table.insert(scopes, v) end end
    end
    at = math.max(at, tonumber(c.at))
    e = math.max(e, tonumber(c.e))
  end
end
for _, v in ipairs(cjson.decode(ARGV[2])) do if not seen[v] then seen[v] = true; table.insert(scopes, v) end end
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode({ s = scopes, at = at, e = e }))
local ttl = redis.call('PTTL', KEYS[1])
if ttl < e - now then redis.call('PEXPIRE', KEYS[1], math.max(1, e - now)) end
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[2], 'GT', ARGV[5], ARGV[4])
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', math.floor(now / 1000))
  local gttl = redis.call('PTTL', KEYS[2])
  if gttl < until_ms - now then redis.call('PEXPIRE', KEYS[2], math.max(1, until_ms - now)) end
end
return 1
`,
)

/**
 * Withdraw an allowance. KEYS[1] = `apps:{sub}`, KEYS[2] = `ugrants:{sub}:client`, KEYS[3] =
 * `consent:{sub}:client`, KEYS[4] = `withdrawn:{sub}:client` (one hash tag). ARGV: 1 client id,
 * 2 now ms, 3 how long to remember the withdrawal (ms). Deletes the first three and records the
 * time in the fourth ({at, e}, e only raised) in one step; returns the grant ids still live
 * (until > now), for the caller to revoke.
 */
export const WITHDRAW_ALLOWANCE = script(
  'withdrawAllowance',
  `
local gids = redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. math.floor(tonumber(ARGV[2]) / 1000), '+inf')
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HDEL', KEYS[1], ARGV[1])
local now = tonumber(ARGV[2])
local e = tonumber(redis.call('HGET', KEYS[4], 'e') or 0)
if e <= now then e = 0 end
e = math.max(e, now + tonumber(ARGV[3]))
redis.call('HSET', KEYS[4], 'at', now, 'e', e)
redis.call('PEXPIRE', KEYS[4], math.max(1, e - now))
return gids
`,
)
