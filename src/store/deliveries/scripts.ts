/**
 * The Lua scripts of queued deliveries on Redis; see src/store/redis/scripts.ts for the rules every
 * script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'

/** How long an idle queue's keys are kept (garbage collection only: jobs end by complete). */
export const QUEUE_KEEP_MS = 24 * 3600_000

/**
 * Queue a job. KEYS[1] = `dq:{queue}` sorted set (job id, score = due ms); KEYS[2] = `dqj:{queue}`
 * hash (job id → JSON {id, payload, attempts, queuedAtMs}). ARGV: 1 id, 2 job JSON, 3 now ms,
 * 4 max queued, 5 keep ms. Over the bound, the jobs due soonest (the oldest) are dropped; returns
 * how many.
 */
export const ENQUEUE_DELIVERY = script(
  'enqueueDelivery',
  `
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
local dropped = 0
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[4])
if over > 0 then
  local popped = redis.call('ZPOPMIN', KEYS[1], over)
  for i = 1, #popped, 2 do redis.call('HDEL', KEYS[2], popped[i]); dropped = dropped + 1 end
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return dropped
`,
)

/**
 * Lease due jobs. KEYS as ENQUEUE_DELIVERY. ARGV: 1 now ms, 2 lease ms, 3 max. Moves each due job's
 * score to now + lease and returns their JSON.
 */
export const CLAIM_DELIVERIES = script(
  'claimDeliveries',
  `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
local until_ms = tonumber(ARGV[1]) + tonumber(ARGV[2])
for _, id in ipairs(ids) do
  local job = redis.call('HGET', KEYS[2], id)
  if job then
    redis.call('ZADD', KEYS[1], 'XX', until_ms, id)
    table.insert(out, job)
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out
`,
)

/** Reschedule a job. KEYS as ENQUEUE_DELIVERY. ARGV: 1 id, 2 due ms. attempts + 1; no-op when gone. */
export const RETRY_DELIVERY = script(
  'retryDelivery',
  `
local job = redis.call('HGET', KEYS[2], ARGV[1])
if not job then return 0 end
local j = cjson.decode(job)
j.attempts = (tonumber(j.attempts) or 0) + 1
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(j))
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
return 1
`,
)
