/**
 * The Lua scripts of the revocation list on Redis; see src/store/redis/scripts.ts for
 * the rules every script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'
/**
 * Shared helper: add `id` to a revocation sorted set (score = exp, epoch s,
 * only ever raised: ZADD GT), trim entries whose exp has passed, and publish
 * the entry as JSON. `zkey` may be nil (cluster mode, where the caller writes
 * the set itself): then only the publish happens here.
 */
export const ADD_REVOCATION_FN = `
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
