/**
 * What the admin API's handlers read: the Runtime's authorization server
 * (clients, people, the store, the revocation list) and the API's own
 * pieces, built once per Runtime (a reload builds a new one).
 */
import type { AsContext } from '../as/context.js'
import type { AdminApiConfig } from '../config/validated-config.js'
import { CursorCodec } from './cursor.js'

export interface AdminContext {
  readonly as: AsContext
  readonly config: AdminApiConfig
  readonly cursors: CursorCodec
}

const built = new WeakMap<AsContext, AdminContext>()

/** The admin context of `as` (one per Runtime), or null when the admin API is off. */
export function adminContextOf(as: AsContext): AdminContext | null {
  const config = as.config.adminApi
  if (!config) return null
  let ctx = built.get(as)
  if (ctx === undefined) {
    ctx = { as, config, cursors: CursorCodec.fromKeys(as.keys) }
    built.set(as, ctx)
  }
  return ctx
}
