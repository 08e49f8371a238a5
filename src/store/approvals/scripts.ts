/**
 * The Lua scripts of approvals (issue #41) on Redis; see src/store/redis/scripts.ts for the rules every
 * script follows (its keys share one hash tag, "now" is an argument).
 *
 * Every person script takes KEYS[1] = `appr:{sub}` hash (id → the record's JSON as the caller wrote it:
 * never changed) and KEYS[2] = `apprs:{sub}` hash (id → state JSON, written only here: {k: the call's
 * match key, c: client id, g: grant id or '', r: reuse, s: status, e: expiresAt s, d: decidedAt s,
 * a: decidedAcr}). A record whose `e` + keep has passed is dropped when the person opens another.
 * Each returns {record JSON, state JSON} of the record it changed or found, or nothing.
 */
import { script } from '../redis/scripts.js'

/**
 * Open (or find) an approval. ARGV: 1 id, 2 record JSON, 3 state JSON (pending), 4 match key, 5 now s,
 * 6 max pending per person, 7 keep s, 8 'check' (find or count only) or 'create'.
 * Returns {'pending', record, state} for a live pending one with the same match key, {'too_many'} when the
 * person already has the maximum pending, {'go'} for a check that would create, {'created', record, state}.
 */
export const OPEN_APPROVAL = script(
  'openApproval',
  `
local now = tonumber(ARGV[5])
local keep = tonumber(ARGV[7])
local states = redis.call('HGETALL', KEYS[2])
local pending = 0
for i = 1, #states, 2 do
  local id = states[i]
  local st = cjson.decode(states[i + 1])
  if now >= tonumber(st.e) + keep then
    redis.call('HDEL', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
  elseif st.s == 'pending' and tonumber(st.e) > now then
    if st.k == ARGV[4] then return { 'pending', redis.call('HGET', KEYS[1], id), states[i + 1] } end
    pending = pending + 1
  end
end
if pending >= tonumber(ARGV[6]) then return { 'too_many' } end
if ARGV[8] == 'check' then return { 'go' } end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
local ttl = (tonumber(cjson.decode(ARGV[3]).e) + keep - now) * 1000
for k = 1, 2 do
  if redis.call('PTTL', KEYS[k]) < ttl then redis.call('PEXPIRE', KEYS[k], math.max(1, ttl)) end
end
return { 'created', ARGV[2], ARGV[3] }
`,
)

/**
 * Decide a pending approval. ARGV: 1 id, 2 'approved' | 'denied', 3 acr or '', 4 approved until s, 5 now s,
 * 6 keep s. Only a live pending one changes.
 */
export const DECIDE_APPROVAL = script(
  'decideApproval',
  `
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then return nil end
local st = cjson.decode(raw)
local now = tonumber(ARGV[5])
if st.s ~= 'pending' or tonumber(st.e) <= now then return nil end
st.s = ARGV[2]
st.d = now
if ARGV[3] ~= '' then st.a = ARGV[3] end
if ARGV[2] == 'approved' then st.e = tonumber(ARGV[4]) end
local enc = cjson.encode(st)
redis.call('HSET', KEYS[2], ARGV[1], enc)
local ttl = (tonumber(st.e) + tonumber(ARGV[6]) - now) * 1000
for k = 1, 2 do
  if redis.call('PTTL', KEYS[k]) < ttl then redis.call('PEXPIRE', KEYS[k], math.max(1, ttl)) end
end
return { redis.call('HGET', KEYS[1], ARGV[1]), enc }
`,
)

/**
 * Pass a call: the first live approved approval with match key ARGV[1] (ARGV[2] = now s); a `reuse: once`
 * one becomes used in the same step, so of two concurrent calls one passes.
 */
export const CONSUME_APPROVAL = script(
  'consumeApproval',
  `
local now = tonumber(ARGV[2])
local states = redis.call('HGETALL', KEYS[2])
for i = 1, #states, 2 do
  local st = cjson.decode(states[i + 1])
  if st.k == ARGV[1] and st.s == 'approved' and tonumber(st.e) > now then
    local enc = states[i + 1]
    if st.r ~= 'ttl' then
      st.s = 'used'
      enc = cjson.encode(st)
      redis.call('HSET', KEYS[2], states[i], enc)
    end
    return { redis.call('HGET', KEYS[1], states[i]), enc }
  end
end
return nil
`,
)

/** Approved → used by id (ARGV: 1 id, 2 now s): CIBA issues tokens once. */
export const TAKE_APPROVAL = script(
  'takeApproval',
  `
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then return nil end
local st = cjson.decode(raw)
if st.s ~= 'approved' or tonumber(st.e) <= tonumber(ARGV[2]) then return nil end
st.s = 'used'
local enc = cjson.encode(st)
redis.call('HSET', KEYS[2], ARGV[1], enc)
return { redis.call('HGET', KEYS[1], ARGV[1]), enc }
`,
)

/**
 * Cancel the live pending or approved approvals of one grant (ARGV[1] = grant id) or of every grant
 * (ARGV[1] = ''), ARGV[2] = now s. Returns the cancelled ones as a flat list id, client id, … (the
 * caller frees their per-client places).
 */
export const CANCEL_APPROVALS = script(
  'cancelApprovals',
  `
local now = tonumber(ARGV[2])
local out = {}
local states = redis.call('HGETALL', KEYS[2])
for i = 1, #states, 2 do
  local st = cjson.decode(states[i + 1])
  if (ARGV[1] == '' or st.g == ARGV[1]) and (st.s == 'pending' or st.s == 'approved') and tonumber(st.e) > now then
    st.s = 'cancelled'
    if not st.d then st.d = now end
    redis.call('HSET', KEYS[2], states[i], cjson.encode(st))
    table.insert(out, states[i])
    table.insert(out, st.c)
  end
end
return out
`,
)

/**
 * Hold a place among a client's pending approvals. KEYS[1] = `apprc:{client}` sorted set (id, score =
 * expiresAt s). ARGV: 1 id, 2 expiresAt s, 3 now s, 4 max. Returns 1 when placed, 0 when full.
 */
export const PLACE_CLIENT_APPROVAL = script(
  'placeClientApproval',
  `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[3])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
local ttl = (tonumber(ARGV[2]) - tonumber(ARGV[3])) * 1000
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], math.max(1, ttl)) end
return 1
`,
)
