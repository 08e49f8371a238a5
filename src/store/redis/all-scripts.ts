/**
 * Every Lua script of the Redis store, by name: what tools that watch Redis
 * (the Redis command-count test, the benchmark) show an EVALSHA as.
 */
export * from '../admin-clients/scripts.js'
export * from '../allowances/scripts.js'
export * from '../clients/scripts.js'
export * from '../codes/scripts.js'
export * from '../deliveries/scripts.js'
export * from '../devices/scripts.js'
export * from '../grants/scripts.js'
export * from '../mcp-sessions/scripts.js'
export * from '../opaque-tokens/scripts.js'
export * from '../passkeys/scripts.js'
export * from '../people/scripts.js'
export * from '../rate-limits/scripts.js'
export * from '../revocations/scripts.js'
export * from '../sessions/scripts.js'
export * from '../signals/scripts.js'
export * from '../single-use/scripts.js'
export * from '../traffic-limits/scripts.js'
export { type LuaScript, PUT_HASH } from './scripts.js'
