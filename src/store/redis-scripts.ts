/**
 * The Lua scripts behind every atomic transition of the Redis store. Each
 * script touches only the keys passed in KEYS, and (except where noted for the
 * revocation list on a single node) all of those share one hash tag, so the
 * same script runs on Redis Cluster.
 *
 * Time: scripts never read Redis' clock. The caller passes "now" (epoch ms,
 * from the injected Clock) and every expiry decision compares it with a time
 * stored in the record; Redis TTLs (PEXPIRE) only collect garbage.
 */
import { createHash } from 'node:crypto'

/** A script and its SHA-1, for EVALSHA with an EVAL fallback on NOSCRIPT. */
export interface LuaScript {
  readonly name: string
  readonly lua: string
  readonly sha: string
}

function script(name: string, lua: string): LuaScript {
  return { name, lua, sha: createHash('sha1').update(lua, 'utf8').digest('hex') }
}

/**
 * Shared helper: add `id` to a revocation sorted set (score = exp, epoch s,
 * only ever raised: ZADD GT), trim entries whose exp has passed, and publish
 * the entry as JSON. `zkey` may be nil (cluster mode, where the caller writes
 * the set itself): then only the publish happens here.
 */
const ADD_REVOCATION_FN = `
local function add_revocation(zkey, kind, id, exp, now_sec, channel, publish)
  local stored = exp
  if zkey then
    redis.call('ZADD', zkey, 'GT', exp, id)
    redis.call('ZREMRANGEBYSCORE', zkey, '-inf', '(' .. now_sec)
    local s = redis.call('ZSCORE', zkey, id)
    if s then stored = tonumber(s) end
  end
  if publish then
    redis.call('PUBLISH', channel, cjson.encode({ kind = kind, id = id, exp = stored }))
  end
end
`

/** KEYS[1] = key; ARGV[1] = ttl ms; ARGV[2..] = field, value pairs. Replaces the hash. */
export const PUT_HASH = script(
  'putHash',
  `
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`,
)

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
 * KEYS[1] = revocation sorted set of the entry's kind; ARGV: 1 kind, 2 id, 3 exp (s), 4 now ms,
 * 5 channel, 6 '1' to publish. Returns the stored exp.
 */
export const ADD_REVOCATION = script(
  'addRevocation',
  ADD_REVOCATION_FN +
    `
local now_sec = math.floor(tonumber(ARGV[4]) / 1000)
add_revocation(KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]), now_sec, ARGV[5], ARGV[6] == '1')
return 1
`,
)

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

/**
 * Fixed-window counter. KEYS[1] = counter {c, r}; ARGV: 1 now ms, 2 window s.
 * A window starts at the first hit and resets at r (epoch ms); returns the count.
 * Whether a window is over is decided by r against the caller's clock, never
 * by Redis's own expiry, so the key is kept a minute past r: instances whose
 * clocks differ a little (or a test's clock) still agree on the count.
 */
export const HIT = script(
  'hit',
  `
local now = tonumber(ARGV[1])
local win = tonumber(ARGV[2]) * 1000
local r = redis.call('HGET', KEYS[1], 'r')
if not r or now >= tonumber(r) then
  redis.call('HSET', KEYS[1], 'c', 1, 'r', now + win)
  redis.call('PEXPIRE', KEYS[1], win + 60000)
  return 1
end
return redis.call('HINCRBY', KEYS[1], 'c', 1)
`,
)

/**
 * Several fixed-window counters (see HIT) read in one command: KEYS are the
 * counters; returns {c1, r1, c2, r2, ...} (false where a field is absent).
 * Single node only (the keys may lie in different cluster slots): a failure
 * check reads a client's per-pair and per-address counters in one round trip.
 */
export const HIT_WINDOWS = script(
  'hitWindows',
  `
local out = {}
for i = 1, #KEYS do
  local h = redis.call('HMGET', KEYS[i], 'c', 'r')
  out[2 * i - 1] = h[1]
  out[2 * i] = h[2]
end
return out
`,
)

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
 * Record a passkey sign-in. KEYS[1] = `pk:{sub}` hash (fields `r:<id>` record JSON, `c:<id>` counter,
 * `b:<id>` backed up 1|0, `u:<id>` last used s). ARGV: 1 credential id, 2 counter, 3 backed up, 4 at (s).
 * Returns 'missing', 'regressed' (the counter did not move forward while either is non-zero) or 'used'.
 */
export const USE_PASSKEY = script(
  'usePasskey',
  `
local id = ARGV[1]
if redis.call('HEXISTS', KEYS[1], 'r:' .. id) == 0 then return 'missing' end
local stored = tonumber(redis.call('HGET', KEYS[1], 'c:' .. id) or '0') or 0
local counter = tonumber(ARGV[2])
if (counter > 0 or stored > 0) and counter <= stored then return 'regressed' end
redis.call('HSET', KEYS[1], 'c:' .. id, ARGV[2], 'b:' .. id, ARGV[3], 'u:' .. id, ARGV[4])
return 'used'
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

/**
 * Replace a passkey's record (a rename) only while it exists, so a rename racing a removal
 * cannot bring it back. KEYS[1] = `pk:{sub}`; ARGV: 1 credential id, 2 record JSON. Returns 1 or 0.
 */
export const RENAME_PASSKEY = script(
  'renamePasskey',
  `
if redis.call('HEXISTS', KEYS[1], 'r:' .. ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'r:' .. ARGV[1], ARGV[2])
return 1
`,
)

export const ALL_SCRIPTS: readonly LuaScript[] = [
  PUT_HASH,
  TAKE_CODE,
  LINK_CODE_GRANT,
  NOTE_ACCESS_EXP,
  ROTATE_REFRESH,
  REVOKE_GRANT,
  ADD_REVOCATION,
  DELETE_OPAQUE,
  CLAIM_USER_CODE,
  DECIDE_DEVICE,
  POLL_DEVICE,
  HIT,
  NOTE_ALLOWANCE,
  WITHDRAW_ALLOWANCE,
  USE_ONCE,
  TOUCH_CLIENT,
  SEAT_CLIENT,
  USE_PASSKEY,
  RENAME_PASSKEY,
]
