/**
 * The Lua script of traffic limits on Redis; see src/store/redis/scripts.ts
 * for the rules every script follows ("now" is an argument). The steps are
 * those of gcra.ts, which the memory store runs.
 */
import { script } from '../redis/scripts.js'

/**
 * Decide requests one after another, each against every limit it meets,
 * and count each in all of its limits only when each has room. The requests
 * of one call are decided exactly as separate calls in that order would be:
 * a later one reads what an earlier one counted.
 *
 * KEYS: one per limit, the requests' keys one after another. ARGV[1] = now
 * (epoch ms); then per request: its number of keys n, then four per key:
 * kind (`r` rate, `q` quota), cost, and for `r` the interval and capacity
 * (ms), for `q` the limit and the period's end (epoch ms). Returns, per
 * request, {allowed, then per key remaining, reset ms, wait ms}.
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
local out = {}
local k = 0
local a = 2
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  a = a + 1
  local allowed = 1
  local res = {}
  local nexts = {}
  local idle = {}
  for i = 1, n do
    local base = a + (i - 1) * 4
    local kind = ARGV[base]
    local cost = tonumber(ARGV[base + 1])
    local x = tonumber(ARGV[base + 2])
    local y = tonumber(ARGV[base + 3])
    local v = tonumber(redis.call('GET', KEYS[k + i]) or '')
    local remaining, reset, wait
    if kind == 'r' then
      local from = now
      if v and v > now then from = v end
      local nxt = from + cost * x
      local late = nxt - y - now
      if late > 0 then
        allowed = 0
        remaining = math.floor((y - (from - now)) / x + 1e-9)
        reset = math.ceil(from - now)
        wait = math.ceil(late)
      else
        nexts[i] = nxt
        remaining = math.floor((y - (nxt - now)) / x + 1e-9)
        reset = math.ceil(nxt - now)
        wait = 0
        idle[i] = {math.floor((y - (from - now)) / x + 1e-9), math.ceil(from - now)}
      end
    else
      local count = v or 0
      reset = math.ceil(y - now)
      if reset < 0 then reset = 0 end
      if count + cost > x then
        allowed = 0
        remaining = x - count
        wait = reset
      else
        nexts[i] = count + cost
        remaining = x - count - cost
        wait = 0
        idle[i] = {x - count, reset}
      end
    end
    if remaining < 0 then remaining = 0 end
    res[3 * i - 2] = remaining
    res[3 * i - 1] = reset
    res[3 * i] = wait
  end
  if allowed == 0 then
    -- Nothing is counted: a limit that had room reports itself as it stays.
    for i, s in pairs(idle) do
      res[3 * i - 2] = s[1]
      res[3 * i - 1] = s[2]
    end
  else
    for i = 1, n do
      local base = a + (i - 1) * 4
      local nxt = nexts[i]
      if ARGV[base] == 'r' then
        redis.call('SET', KEYS[k + i], string.format('%.3f', nxt), 'PX', math.ceil(nxt - now) + 1000)
      else
        redis.call('SET', KEYS[k + i], nxt, 'PX', math.ceil(tonumber(ARGV[base + 3]) - now) + 86400000)
      end
    end
  end
  out[#out + 1] = allowed
  for j = 1, 3 * n do out[#out + 1] = res[j] end
  k = k + n
  a = a + 4 * n
end
return out
`,
)
