/**
 * Every Lua script of the Redis store, by name: what tools that watch Redis
 * (the Redis command-count test, the benchmark) show an EVALSHA as.
 */
import type { LuaScript } from './scripts.js'
import { TAKE_CODE, LINK_CODE_GRANT } from '../codes/scripts.js'
import { NOTE_ACCESS_EXP, ROTATE_REFRESH, REVOKE_GRANT } from '../grants/scripts.js'
import { ADD_REVOCATION } from '../revocations/scripts.js'
import { DELETE_OPAQUE } from '../opaque-tokens/scripts.js'
import { CLAIM_USER_CODE, DECIDE_DEVICE, POLL_DEVICE } from '../devices/scripts.js'
import { HIT, HIT_WINDOWS } from '../rate-limits/scripts.js'
import { USE_ONCE } from '../single-use/scripts.js'
import { NOTE_ALLOWANCE, WITHDRAW_ALLOWANCE } from '../allowances/scripts.js'
import { TOUCH_CLIENT, SEAT_CLIENT } from '../clients/scripts.js'
import { USE_PASSKEY, RENAME_PASSKEY } from '../passkeys/scripts.js'
import { PUT_HASH } from './scripts.js'

export type { LuaScript } from './scripts.js'
export {
  PUT_HASH,
  TAKE_CODE,
  LINK_CODE_GRANT,
  NOTE_ACCESS_EXP,
  ROTATE_REFRESH,
  REVOKE_GRANT,
  ADD_REVOCATION,
  DELETE_OPAQUE,
  CLAIM_USER_CODE,
  DECIDE_DEVICE,
  POLL_DEVICE,
  HIT,
  HIT_WINDOWS,
  USE_ONCE,
  NOTE_ALLOWANCE,
  WITHDRAW_ALLOWANCE,
  TOUCH_CLIENT,
  USE_PASSKEY,
  SEAT_CLIENT,
  RENAME_PASSKEY,
}

export const ALL_SCRIPTS: readonly LuaScript[] = [
  PUT_HASH,
  TAKE_CODE,
  LINK_CODE_GRANT,
  NOTE_ACCESS_EXP,
  ROTATE_REFRESH,
  REVOKE_GRANT,
  ADD_REVOCATION,
  DELETE_OPAQUE,
  CLAIM_USER_CODE,
  DECIDE_DEVICE,
  POLL_DEVICE,
  HIT,
  NOTE_ALLOWANCE,
  WITHDRAW_ALLOWANCE,
  USE_ONCE,
  TOUCH_CLIENT,
  SEAT_CLIENT,
  USE_PASSKEY,
  RENAME_PASSKEY,
]
