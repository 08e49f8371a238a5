/**
 * The Lua scripts of MCP session bindings on Redis; see src/store/redis/scripts.ts
 * for the rules every script follows (its keys share one hash tag, "now" is an argument).
 * A binding is the string `<until ms>:<owner>`, with a PX of its lifetime for cleanup.
 */
import { script } from '../redis/scripts.js'

/**
 * Bind unless another owner holds the session. KEYS[1] = binding; ARGV[1] =
 * now ms; ARGV[2] = ttl ms; ARGV[3] = until ms; ARGV[4] = owner. Returns 1
 * when bound to the owner, 0 when another holds it.
 */
export const BIND_MCP_SESSION = script(
  'bindMcpSession',
  `
local held = redis.call('GET', KEYS[1])
if held then
  local sep = string.find(held, ':', 1, true)
  if tonumber(ARGV[1]) < tonumber(string.sub(held, 1, sep - 1)) and string.sub(held, sep + 1) ~= ARGV[4] then return 0 end
end
redis.call('SET', KEYS[1], ARGV[3] .. ':' .. ARGV[4], 'PX', ARGV[2])
return 1
`,
)

/**
 * The owner, the lifetime renewed. KEYS[1] = binding; ARGV[1] = now ms;
 * ARGV[2] = ttl ms; ARGV[3] = until ms. Returns the owner, or false.
 */
export const MCP_SESSION_OWNER = script(
  'mcpSessionOwner',
  `
local held = redis.call('GET', KEYS[1])
if not held then return false end
local sep = string.find(held, ':', 1, true)
if tonumber(ARGV[1]) >= tonumber(string.sub(held, 1, sep - 1)) then return false end
local owner = string.sub(held, sep + 1)
redis.call('SET', KEYS[1], ARGV[3] .. ':' .. owner, 'PX', ARGV[2])
return owner
`,
)
