/**
 * Withdrawing what a person allowed an application: the account page's "Withdraw access" and the
 * session-ending module's `grants: true` (src/as/sessions/end-sessions.ts) both call this, so a
 * withdrawal is one path: the grants are revoked (refresh families end, their ids go on the
 * revocation list published to every instance, which refuses their access tokens and ends open
 * streams), the remembered consent is forgotten, and the withdrawal is remembered so a code issued
 * before it is refused.
 */
import { epochSeconds } from '../clock.js'
import type { AllowanceRecord } from '../store/types.js'
import type { AsContext } from './context.js'
import { revokeGrant } from './revocation.js'
import type { GrantEnding } from './audit.js'

/**
 * How long a withdrawal is remembered: the longest `code_ttl` the config accepts, so a code issued
 * before it (even under a longer code_ttl before a reload) is refused at /token for all its life.
 */
const WITHDRAWAL_MEMORY_SEC = 600

/**
 * Revoke every grant of `ids` until the latest access token issued under it
 * has expired (at least an access-token lifetime from now, for a grant whose
 * family record is already gone).
 */
async function revokeAll(as: AsContext, ids: readonly string[], clientId: string, ending: GrantEnding): Promise<void> {
  const floor = epochSeconds(as.clock) + as.as.accessToken.ttlSec
  for (const id of ids) {
    const grant = await as.store.grants.get(id)
    await revokeGrant(as, id, Math.max(floor, grant?.maxAccessExp ?? 0))
    as.audit.record({
      event: ending.event,
      actor: ending.actor,
      subject: { kind: 'grant', id },
      clientId,
      address: ending.origin?.address ?? null,
      userAgent: ending.origin?.userAgent ?? null,
      outcome: 'success',
      ...(ending.reason === undefined ? {} : { reason: ending.reason }),
    })
  }
}

/** The person withdrawing on their own account page: what the audit trail says when no one else is named. */
function byThePerson(sub: string): GrantEnding {
  return { event: 'grant.withdrawn', actor: { kind: 'person', id: sub } }
}

/**
 * Withdraw (sub, client): revoke the grants the allowance lists, then forget
 * it atomically (which also returns any grant that joined meanwhile, revoked
 * too). A failure part-way leaves the allowance in place, so trying again
 * finishes the job. Returns how many grants were revoked.
 */
export async function withdrawAccess(as: AsContext, sub: string, clientId: string, ending: GrantEnding = byThePerson(sub)): Promise<number> {
  const listed: AllowanceRecord | undefined = (await as.store.allowances.list(sub)).find((a) => a.clientId === clientId)
  const first = listed?.grantIds ?? []
  await revokeAll(as, first, clientId, ending)
  const late = (await as.store.allowances.withdraw(sub, clientId, WITHDRAWAL_MEMORY_SEC)).filter((id) => !first.includes(id))
  await revokeAll(as, late, clientId, ending)
  return first.length + late.length
}

/** Withdraw every application `sub` allowed; returns how many grants were revoked. */
export async function withdrawAllAccess(as: AsContext, sub: string, ending: GrantEnding = byThePerson(sub)): Promise<number> {
  let revoked = 0
  for (const a of await as.store.allowances.list(sub)) revoked += await withdrawAccess(as, sub, a.clientId, ending)
  // Every approval of the person ends too, CIBA requests (no grant yet) included.
  await as.approvals.cancelPerson(sub)
  return revoked
}
