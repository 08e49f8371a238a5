/**
 * The Lua scripts of grants and refresh-token families on Redis; see src/store/redis/scripts.ts for
 * the rules every script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'
import { ADD_REVOCATION_FN } from '../revocations/scripts.js'
/**
 * KEYS[1] = grant key {g, exp, max, cur, rev, t:<hash>...}; ARGV[1] = exp (s), ARGV[2] = now ms.
 * Raises maxAccessExp of a live, unrevoked family.
 */
export const NOTE_ACCESS_EXP = script(
  'noteAccessExp',
  `
local h = redis.call('HMGET', KEYS[1], 'exp', 'max', 'rev')
if not h[1] or h[3] then return 0 end
if tonumber(ARGV[2]) >= tonumber(h[1]) * 1000 then return 0 end
if tonumber(ARGV[1]) > tonumber(h[2]) then redis.call('HSET', KEYS[1], 'max', ARGV[1]) end
return 1
`,
)

/**
 * Refresh rotation with reuse detection (RFC 9700 4.14.2).
 * KEYS[1] = grant key; KEYS[2] = revoked-grants sorted set (single node only; absent on cluster).
 * ARGV: 1 old hash, 2 new hash or '', 3 new expiresAt (s), 4 now ms, 5 grant id, 6 channel,
 * 7 the expiry (s) of the access token issued with this rotation, or '' (optional): a rotation
 * raises maxAccessExp to it in the same step, as noteAccessExp would after it.
 * The old hash must be a member of this family (field t:<hash>): the caller found the grant id
 * through a separate index key, and this re-check makes a race with that lookup harmless.
 * Returns {status, grantJson, expiresAt, maxAccessExp, revokedUntil?} with status
 * 'rotated' | 'reused' | 'missing'. On reuse the family becomes a tombstone (field rev =
 * revoked-until), which keeps recognising its tokens as reused but serves nothing.
 */
export const ROTATE_REFRESH = script(
  'rotateRefresh',
  ADD_REVOCATION_FN +
    `
local now = tonumber(ARGV[4])
local now_sec = math.floor(now / 1000)
local h = redis.call('HMGET', KEYS[1], 'g', 'exp', 'max', 'cur', 'rev', 't:' .. ARGV[1])
if not h[1] or not h[6] then return {'missing'} end
if now >= tonumber(h[2]) * 1000 then return {'missing'} end
if h[4] == ARGV[1] then
  if h[5] then return {'missing'} end
  local max = h[3]
  if ARGV[7] and ARGV[7] ~= '' and tonumber(ARGV[7]) > tonumber(max) then max = ARGV[7] end
  if ARGV[2] == '' then
    if max ~= h[3] then redis.call('HSET', KEYS[1], 'max', max) end
    return {'rotated', h[1], h[2], max}
  end
  redis.call('HSET', KEYS[1], 'cur', ARGV[2], 't:' .. ARGV[2], now_sec, 'exp', ARGV[3], 'max', max)
  redis.call('PEXPIRE', KEYS[1], math.max(1, tonumber(ARGV[3]) * 1000 - now))
  return {'rotated', h[1], ARGV[3], max}
end
if h[5] then return {'reused', h[1], h[2], h[3], h[5]} end
local until_sec = math.max(tonumber(h[3]), now_sec)
redis.call('HSET', KEYS[1], 'rev', until_sec)
add_revocation(KEYS[2], 'grant', ARGV[5], until_sec, now_sec, ARGV[6], true)
return {'reused', h[1], h[2], h[3], tostring(until_sec)}
`,
)

/**
 * Revoke a grant: tombstone the family (if live) and add the grant id to the
 * revocation list until max(until, maxAccessExp), published. Idempotent.
 * KEYS[1] = grant key; KEYS[2] = revoked-grants set (single node only).
 * ARGV: 1 grant id, 2 until (s), 3 now ms, 4 channel. Returns the until used.
 */
export const REVOKE_GRANT = script(
  'revokeGrant',
  ADD_REVOCATION_FN +
    `
local now = tonumber(ARGV[3])
local now_sec = math.floor(now / 1000)
local until_sec = tonumber(ARGV[2])
local h = redis.call('HMGET', KEYS[1], 'exp', 'max', 'rev')
if h[1] and now < tonumber(h[1]) * 1000 then
  until_sec = math.max(until_sec, tonumber(h[2]))
  if h[3] then until_sec = math.max(until_sec, tonumber(h[3])) end
  redis.call('HSET', KEYS[1], 'rev', until_sec)
end
add_revocation(KEYS[2], 'grant', ARGV[1], until_sec, now_sec, ARGV[4], true)
return tostring(until_sec)
`,
)

/**
 * Store a new family and note it in its client's index, in one step (single
 * node only: on a cluster the index lives in another slot and is written
 * beside it). KEYS: 1 grant key, 2 the client's index (sorted set by lex).
 * ARGV: 1 ttl ms, 2 grant id, then the family's fields and values.
 */
export const PUT_GRANT = script(
  'putGrant',
  `
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[2])
return 1
`,
)
