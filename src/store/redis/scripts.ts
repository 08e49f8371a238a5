/**
 * The Lua scripts behind every atomic transition of the Redis store. Each
 * script touches only the keys passed in KEYS, and (except where noted for the
 * revocation list on a single node) all of those share one hash tag, so the
 * same script runs on Redis Cluster.
 *
 * Time: scripts never read Redis' clock. The caller passes "now" (epoch ms,
 * from the injected Clock) and every expiry decision compares it with a time
 * stored in the record; Redis TTLs (PEXPIRE) only collect garbage.
 */
import { createHash } from 'node:crypto'

/** A script and its SHA-1, for EVALSHA with an EVAL fallback on NOSCRIPT. */
export interface LuaScript {
  readonly name: string
  readonly lua: string
  readonly sha: string
}

export function script(name: string, lua: string): LuaScript {
  return { name, lua, sha: createHash('sha1').update(lua, 'utf8').digest('hex') }
}

/** KEYS[1] = key; ARGV[1] = ttl ms; ARGV[2..] = field, value pairs. Replaces the hash. */
export const PUT_HASH = script(
  'putHash',
  `
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`,
)
