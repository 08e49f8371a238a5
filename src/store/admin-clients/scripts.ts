/**
 * The Lua scripts of admin-managed clients on Redis; see src/store/redis/scripts.ts
 * for the rules every script follows (its keys share one hash tag).
 */
import { script } from '../redis/scripts.js'

/**
 * Create a client unless its id is taken.
 * KEYS: 1 client hash, 2 the index (sorted set by lex). ARGV: 1 record JSON, 2 client id, 3 version.
 * Returns 1 created, 0 taken.
 */
export const CREATE_ADMIN_CLIENT = script(
  'createAdminClient',
  `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'r', ARGV[1], 'v', ARGV[3])
redis.call('ZADD', KEYS[2], 0, ARGV[2])
return 1
`,
)

/**
 * Replace a client's record while it is still at the version it was read at.
 * KEYS: 1 client hash. ARGV: 1 version read, 2 new record JSON, 3 new version.
 * Returns 1 written, 0 moved on (or gone).
 */
export const SWAP_ADMIN_CLIENT = script(
  'swapAdminClient',
  `
local v = redis.call('HGET', KEYS[1], 'v')
if not v or v ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'r', ARGV[2], 'v', ARGV[3])
return 1
`,
)

/**
 * Delete a client while it is at the version it was read at.
 * KEYS: 1 client hash, 2 the index. ARGV: 1 version read, 2 client id.
 * Returns 1 deleted, 0 moved on (or gone).
 */
export const DELETE_ADMIN_CLIENT = script(
  'deleteAdminClient',
  `
local v = redis.call('HGET', KEYS[1], 'v')
if not v or v ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1
`,
)
