/**
 * The authorization server's side of {@link AccessEnder}: what the Shared
 * Signals receiver asks to end, done by the session module
 * (src/as/sessions/end-sessions.ts: each ending logged, and told to its
 * listeners, back-channel logout among them) and the AS's revocation path
 * (src/as/withdraw-access.ts, src/as/revocation.ts: refresh families end,
 * grant ids go on the list published to every instance, which refuses their
 * tokens and ends open streams).
 */
import { epochSeconds } from '../clock.js'
import type { AsContext } from '../as/context.js'
import { revokeGrant } from '../as/revocation.js'
import { endSessionsByProviderSession, endSessionsOf } from '../as/sessions/end-sessions.js'
import { withdrawAllAccess } from '../as/withdraw-access.js'
import type { AccessEnder } from './access.js'

export function asAccessEnder(as: AsContext): AccessEnder {
  return {
    async endSessions(sub, which) {
      if (which === null) return (await endSessionsOf(as, sub, 'signal')).sessions.length
      const sessions = await as.store.sessions.endSomeOf(sub, which)
      if (sessions.length > 0) await as.sessionEnds.emit({ sub, reason: 'signal', sessions, grantsRevoked: null })
      return sessions.length
    },
    async endProviderSession(provider, sid) {
      const ended = await endSessionsByProviderSession(as, provider, { sid }, 'signal')
      return ended.reduce((n, e) => n + e.sessions.length, 0)
    },
    async endGrants(sub, which) {
      // Every grant: the account page's withdrawal, one path (remembered consent forgotten too).
      if (which === null) return withdrawAllAccess(as, sub)
      const floor = epochSeconds(as.clock) + as.as.accessToken.ttlSec
      let ended = 0
      for (const allowance of await as.store.allowances.list(sub)) {
        for (const id of allowance.grantIds) {
          const grant = await as.store.grants.get(id)
          if (grant === null || !which(grant)) continue
          await revokeGrant(as, id, Math.max(floor, grant.maxAccessExp))
          ended++
        }
      }
      return ended
    },
  }
}
