/**
 * The Lua script of traffic limits on Redis; see src/store/redis/scripts.ts
 * for the rules every script follows ("now" is an argument). The steps are
 * those of gcra.ts, which the memory store runs, plus the leases of
 * lease.ts.
 */
import { script } from '../redis/scripts.js'
import { MAX_LEASE_MS } from './lease.js'

/** Replies per key after the request's verdict (remaining, reset, wait, granted, run). */
export const REPLIES_PER_KEY = 5

/**
 * Decide requests one after another, each against every limit it meets,
 * and count each in all of its limits only when each has room. The requests
 * of one call are decided exactly as separate calls in that order would be:
 * a later one reads what an earlier one counted.
 *
 * KEYS: one per limit, the requests' keys one after another. ARGV[1] = now
 * (epoch ms); then per request: its number of keys n, then seven per key:
 * kind (`r` rate, `q` quota), cost, for `r` the interval and capacity (ms),
 * for `q` the limit and the period's end (epoch ms); then for `r` `want`
 * (units to count when there is room for more than `cost`: a lease), `back`
 * (unused units of an earlier lease to give back first) and `run` (that
 * lease's run, below); `q` ignores the last three. Returns, per request,
 * {allowed, then per key remaining, reset ms, wait ms, units counted, run}.
 *
 * A rate key holds `<TAT>|<run>|<hold>`: the TAT (epoch ms, 3 decimals),
 * the time the TAT last started again from "now" (an absent key, or a TAT
 * that had passed), and the latest end of a lease counted in this run.
 * Between two such starts the TAT is the plain sum of every unit counted,
 * so units given back are taken off it only when the run is the one they
 * were counted in: after a new start they are already forgotten, and taking
 * them off again would let more through. Nor is the TAT moved back before
 * `hold`: another instance's lease may be spent until then, and its units
 * must not be forgotten (a TAT passed) while it is. A lease of `g` units
 * lives min(g × interval, MAX_LEASE_MS) (lease.ts). The key
 * expires when the TAT has passed (an absent key is a whole allowance). A
 * quota key holds its count and expires a day after its period ends (its
 * name carries the period, so a new period is a new key).
 */
export const TAKE_LIMITS = script(
  'takeLimits',
  `
local now = tonumber(ARGV[1])
local stamp = string.format('%.3f', now)
local out = {}
local k = 0
local a = 2
local function put(key, tat, run, hold)
  if tat > now then
    redis.call('SET', key, string.format('%.3f|%s|%.3f', tat, run, hold), 'PX', math.ceil(tat - now) + 1000)
  else
    redis.call('DEL', key)
  end
end
while a <= #ARGV do
  local n = tonumber(ARGV[a])
  a = a + 1
  local allowed = 1
  local res = {}
  local nexts = {}
  local runs = {}
  local holds = {}
  local gave = {}
  local idle = {}
  for i = 1, n do
    local base = a + (i - 1) * 7
    local kind = ARGV[base]
    local cost = tonumber(ARGV[base + 1])
    local x = tonumber(ARGV[base + 2])
    local y = tonumber(ARGV[base + 3])
    local raw = redis.call('GET', KEYS[k + i])
    local remaining, reset, wait
    local granted = 0
    local run = ''
    if kind == 'r' then
      local want = tonumber(ARGV[base + 4])
      local back = tonumber(ARGV[base + 5])
      local v = nil
      local hold = 0
      if raw then
        local tat, r, h = string.match(raw, '^([^|]*)|?([^|]*)|?(.*)$')
        v = tonumber(tat)
        run = r
        hold = tonumber(h) or 0
      end
      if v and back > 0 and run == ARGV[base + 6] then
        v = math.max(v - back * x, hold)
        gave[i] = v
      end
      local from = v
      if not v or v < now then
        from = now
        run = stamp
        hold = 0
      end
      local nxt = from + cost * x
      local late = nxt - y - now
      if late > 0 then
        allowed = 0
        remaining = math.floor((y - (from - now)) / x + 1e-9)
        reset = math.ceil(from - now)
        wait = math.ceil(late)
      else
        local avail = math.floor((y - (from - now)) / x + 1e-9)
        granted = cost
        if want > cost and avail > cost then
          granted = math.min(want, avail)
          hold = math.max(hold, now + math.min(granted * x, ${MAX_LEASE_MS}))
        end
        nxt = from + granted * x
        nexts[i] = nxt
        remaining = math.floor((y - (nxt - now)) / x + 1e-9)
        reset = math.ceil(nxt - now)
        wait = 0
        idle[i] = {avail, math.ceil(from - now)}
      end
      runs[i] = run
      holds[i] = hold
    else
      local count = tonumber(raw or '') or 0
      reset = math.ceil(y - now)
      if reset < 0 then reset = 0 end
      if count + cost > x then
        allowed = 0
        remaining = x - count
        wait = reset
      else
        nexts[i] = count + cost
        granted = cost
        remaining = x - count - cost
        wait = 0
        idle[i] = {x - count, reset}
      end
    end
    if remaining < 0 then remaining = 0 end
    res[5 * i - 4] = remaining
    res[5 * i - 3] = reset
    res[5 * i - 2] = wait
    res[5 * i - 1] = granted
    res[5 * i] = run
  end
  if allowed == 0 then
    -- Nothing is counted: a limit that had room reports itself as it stays.
    for i, s in pairs(idle) do
      res[5 * i - 4] = s[1]
      res[5 * i - 3] = s[2]
      res[5 * i - 1] = 0
    end
    -- Units given back are given back all the same: they were never spent.
    for i, v in pairs(gave) do put(KEYS[k + i], v, runs[i], holds[i]) end
  else
    for i = 1, n do
      local base = a + (i - 1) * 7
      local nxt = nexts[i]
      if ARGV[base] == 'r' then
        put(KEYS[k + i], nxt, runs[i], holds[i])
      else
        redis.call('SET', KEYS[k + i], nxt, 'PX', math.ceil(tonumber(ARGV[base + 3]) - now) + 86400000)
      end
    end
  end
  out[#out + 1] = allowed
  for j = 1, 5 * n do out[#out + 1] = res[j] end
  k = k + n
  a = a + 7 * n
end
return out
`,
)
