/**
 * The authorization server's side of {@link AccessEnder}: what the Shared
 * Signals receiver asks to end, done with the AS's own revocation path
 * (src/as/revocation.ts: refresh families end, grant ids go on the list
 * published to every instance, which refuses their tokens and ends open streams).
 */
import { epochSeconds } from '../clock.js'
import type { AsContext } from '../as/context.js'
import { revokeGrant } from '../as/revocation.js'
import type { AccessEnder } from './access.js'

export function asAccessEnder(as: AsContext): AccessEnder {
  return {
    async endSessions() {
      // Sessions are found by person only once the session index exists (s-logout's `Sessions:` commit).
      return 0
    },
    async endProviderSession() {
      return 0
    },
    async endGrants(sub, which) {
      const floor = epochSeconds(as.clock) + as.as.accessToken.ttlSec
      let ended = 0
      for (const allowance of await as.store.allowances.list(sub)) {
        for (const id of allowance.grantIds) {
          const grant = await as.store.grants.get(id)
          if (grant === null || (which !== null && !which(grant))) continue
          await revokeGrant(as, id, Math.max(floor, grant.maxAccessExp))
          ended++
        }
      }
      return ended
    },
  }
}
