/**
 * The Lua scripts of rate-limit counters on Redis; see src/store/redis/scripts.ts for
 * the rules every script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'
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
 * One hit given back (see HIT). KEYS[1] = counter {c, r}; ARGV: 1 now ms.
 * Only within the window, never below 0.
 */
export const UNHIT = script(
  'unhit',
  `
local r = redis.call('HGET', KEYS[1], 'r')
if not r or tonumber(ARGV[1]) >= tonumber(r) then return 0 end
local c = tonumber(redis.call('HGET', KEYS[1], 'c') or '0')
if c <= 0 then return 0 end
return redis.call('HINCRBY', KEYS[1], 'c', -1)
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
