/**
 * What the CIBA endpoints of one Runtime share besides the approval desk (OpenID CIBA Core 1.0,
 * docs/approvals.md): the ping deliveries, and the YAML people's emails a `login_hint` may name.
 */
import type { UserConfig } from '../../config/validated-config.js'
import { emailIndex } from './login-hint.js'
import type { CibaPings } from './ping.js'

export class CibaRuntime {
  readonly pings: CibaPings
  /** YAML people by lower-cased email (login-hint.ts). */
  readonly emails: ReadonlyMap<string, readonly string[]>

  constructor(pings: CibaPings, users: Iterable<UserConfig>) {
    this.pings = pings
    this.emails = emailIndex(users)
  }
}
