/**
 * The Lua scripts of local people on Redis; see src/store/redis/scripts.ts
 * for the rules every script follows (its keys share one hash tag, "now" is
 * an argument).
 */
import { script } from '../redis/scripts.js'

/**
 * Create a person unless the username or the sub is taken.
 * KEYS: 1 person hash, 2 sub index key, 3 the people index (sorted set by lex), 4 the email's set of
 * usernames (`e:<email>`; any key of the tag when the person has no email).
 * ARGV: 1 record JSON, 2 username, 3 version, 4 "1" when the person has an email.
 * Returns 0 created, 1 username taken, 2 sub taken.
 */
export const CREATE_PERSON = script(
  'createPerson',
  `
if redis.call('EXISTS', KEYS[1]) == 1 then return 1 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 2 end
redis.call('HSET', KEYS[1], 'r', ARGV[1], 'v', ARGV[3])
redis.call('SET', KEYS[2], ARGV[2])
redis.call('ZADD', KEYS[3], 0, ARGV[2])
if ARGV[4] == '1' then redis.call('SADD', KEYS[4], ARGV[2]) end
return 0
`,
)

/**
 * Replace a person's record while it is still at the version it was read at, and move them from
 * the set of the email they had to the set of the email they have.
 * KEYS: 1 person hash, 2 the old email's set, 3 the new email's set (each any key of the tag when none).
 * ARGV: 1 version read, 2 new record JSON, 3 new version, 4 username, 5 "1" when there was an old
 * email, 6 "1" when there is a new one.
 * Returns 1 written, 0 moved on (or gone).
 */
export const SWAP_PERSON = script(
  'swapPerson',
  `
local v = redis.call('HGET', KEYS[1], 'v')
if not v or v ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'r', ARGV[2], 'v', ARGV[3])
if ARGV[5] == '1' then redis.call('SREM', KEYS[2], ARGV[4]) end
if ARGV[6] == '1' then redis.call('SADD', KEYS[3], ARGV[4]) end
return 1
`,
)

/**
 * Delete a person, their sub index entry, their place in the index and in their email's set.
 * KEYS: 1 person hash, 2 sub index key, 3 people index, 4 the email's set (any key of the tag when none).
 * ARGV: 1 username, 2 "1" when the person has an email. Returns the record JSON, or false when there was none.
 */
export const DELETE_PERSON = script(
  'deletePerson',
  `
local r = redis.call('HGET', KEYS[1], 'r')
if not r then return false end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('ZREM', KEYS[3], ARGV[1])
if ARGV[2] == '1' then redis.call('SREM', KEYS[4], ARGV[1]) end
return r
`,
)

/**
 * Use a password link once. KEYS: 1 link key {r: JSON, e: expires ms}.
 * ARGV: 1 now ms. Returns the record JSON, or false (unknown, used, expired).
 */
export const TAKE_PASSWORD_LINK = script(
  'takePasswordLink',
  `
local f = redis.call('HMGET', KEYS[1], 'r', 'e')
redis.call('DEL', KEYS[1])
if not f[1] or tonumber(ARGV[1]) >= tonumber(f[2]) then return false end
return f[1]
`,
)
