/**
 * The Lua scripts of passkeys (WebAuthn) on Redis; see src/store/redis/scripts.ts for
 * the rules every script follows (its keys share one hash tag, "now" is an argument).
 */
import { script } from '../redis/scripts.js'
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
