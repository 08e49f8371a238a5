/**
 * What the CIBA endpoints of one Runtime share besides the approval desk (OpenID CIBA Core 1.0,
 * docs/approvals.md): the ping deliveries. (People a `login_hint` names are found in the person
 * directory and the store: login-hint.ts.)
 */
import type { CibaPings } from './ping.js'

export class CibaRuntime {
  readonly pings: CibaPings

  constructor(pings: CibaPings) {
    this.pings = pings
  }
}
