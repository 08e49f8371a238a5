/**
 * Revoking what the authorization server issued, for every caller: the
 * revocation endpoint (RFC 7009), the authorization code grant (a code used
 * twice revokes what it issued, RFC 6749 4.1.2) and the account page (a
 * person withdrawing a client's access). Endpoints and grants import this;
 * it imports neither.
 */
import type { RevocationEntry } from '../store/types.js'
import type { AsContext } from './context.js'

/** Put an entry on the shared list, and on this instance's copy at once (pub/sub catches up the others). */
export async function revokeEntry(as: AsContext, entry: RevocationEntry): Promise<void> {
  await as.store.revocations.add(entry)
  as.revocations.add(entry)
}

/** Revoke `grantId` until `until` (epoch seconds): its family and, through the list, every access token carrying it. */
export async function revokeGrant(as: AsContext, grantId: string, until: number): Promise<void> {
  await as.store.grants.revoke(grantId, until)
  as.revocations.add({ kind: 'grant', id: grantId, exp: until })
  // Its approvals (issue #41) pass nothing more, and leave the account page's pending list.
  await as.approvals.cancelGrant(grantId)
}
