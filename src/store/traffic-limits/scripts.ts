/**
 * The Lua script of traffic limits on Redis; see src/store/redis/scripts.ts
 * for the rules every script follows ("now" is an argument). The steps are
 * those of gcra.ts, which the memory store runs.
 */
import { script } from '../redis/scripts.js'

/**
 * Decide one request against every limit it meets, and count it in all of
 * them only when each has room. KEYS: one per limit. ARGV[1] = now (epoch
 * ms), then four per key: kind (`r` rate, `q` quota), cost, and for `r` the
 * interval and capacity (ms), for `q` the limit and the period's end (epoch
 * ms). Returns {allowed, then per key remaining, reset ms, wait ms}.
 *
 * A rate key holds its TAT (epoch ms, 3 decimals) and expires when the TAT
 * has passed (an absent key is a whole allowance); a quota key holds its
 * count and expires a day after its period ends (its name carries the
 * period, so a new period is a new key).
 */
export const TAKE_LIMITS = script(
  'takeLimits',
  `
local now = tonumber(ARGV[1])
local allowed = 1
local out = {0}
local nexts = {}
local idle = {}
for i = 1, #KEYS do
  local base = 1 + (i - 1) * 4
  local kind = ARGV[base + 1]
  local cost = tonumber(ARGV[base + 2])
  local a = tonumber(ARGV[base + 3])
  local b = tonumber(ARGV[base + 4])
  local v = tonumber(redis.call('GET', KEYS[i]) or '')
  local remaining, reset, wait
  if kind == 'r' then
    local from = now
    if v and v > now then from = v end
    local nxt = from + cost * a
    local late = nxt - b - now
    if late > 0 then
      allowed = 0
      remaining = math.floor((b - (from - now)) / a + 1e-9)
      reset = math.ceil(from - now)
      wait = math.ceil(late)
    else
      nexts[i] = nxt
      remaining = math.floor((b - (nxt - now)) / a + 1e-9)
      reset = math.ceil(nxt - now)
      wait = 0
      idle[i] = {math.floor((b - (from - now)) / a + 1e-9), math.ceil(from - now)}
    end
  else
    local count = v or 0
    reset = math.ceil(b - now)
    if reset < 0 then reset = 0 end
    if count + cost > a then
      allowed = 0
      remaining = a - count
      wait = reset
    else
      nexts[i] = count + cost
      remaining = a - count - cost
      wait = 0
      idle[i] = {a - count, reset}
    end
  end
  if remaining < 0 then remaining = 0 end
  out[3 * i - 1] = remaining
  out[3 * i] = reset
  out[3 * i + 1] = wait
end
if allowed == 0 then
  -- Nothing is counted: a limit that had room reports itself as it stays.
  for i, s in pairs(idle) do
    out[3 * i - 1] = s[1]
    out[3 * i] = s[2]
  end
end
if allowed == 1 then
  for i = 1, #KEYS do
    local base = 1 + (i - 1) * 4
    local nxt = nexts[i]
    if ARGV[base + 1] == 'r' then
      redis.call('SET', KEYS[i], string.format('%.3f', nxt), 'PX', math.ceil(nxt - now) + 1000)
    else
      redis.call('SET', KEYS[i], nxt, 'PX', math.ceil(tonumber(ARGV[base + 4]) - now) + 86400000)
    end
  end
end
out[1] = allowed
return out
`,
)
