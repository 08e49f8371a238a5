/**
 * Our own opaque access tokens, read back by both faces: the gateway for a
 * route that trusts this issuer, the authorization server for /introspect,
 * /userinfo, /revoke and token exchange. One lookup and one judgement, so the
 * faces cannot disagree on whether a token is still good.
 */
import { hashToken } from '../store/hash.js'
import type { OpaqueTokenRecord, Store } from '../store/types.js'

/** What a stored opaque token is worth at a given time. */
export type OwnOpaqueState = 'active' | 'expired' | 'foreign'

/**
 * `expired` from the token's `exp` on (both faces read one clock, so no skew
 * is allowed), `foreign` when another issuer's record sits under the hash,
 * else `active`. Introspection answers anything but `active` with
 * `active: false`; the gateway refuses it with invalid_token.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7662#section-2.2
 * @see https://www.rfc-editor.org/rfc/rfc7519#section-4.1.4
 */
export function ownOpaqueState(record: OpaqueTokenRecord, issuer: string, nowMs: number): OwnOpaqueState {
  if (record.iss !== issuer) return 'foreign'
  return record.exp * 1000 <= nowMs ? 'expired' : 'active'
}

/** The result of a lookup: the record when active, else why not (`unknown`: the store holds no record). */
export type OwnOpaqueLookup = { readonly state: 'active'; readonly record: OpaqueTokenRecord } | { readonly state: 'expired' | 'foreign' | 'unknown' }

/**
 * Look `token` up by its hash (the store never holds the value) and judge it
 * at `nowMs`. Store failures propagate: each face answers them its own way.
 */
export async function lookupOwnOpaqueToken(store: Pick<Store, 'opaqueTokens'>, issuer: string, token: string, nowMs: number): Promise<OwnOpaqueLookup> {
  const record = await store.opaqueTokens.get(hashToken(token))
  if (record === null) return { state: 'unknown' }
  const state = ownOpaqueState(record, issuer, nowMs)
  return state === 'active' ? { state, record } : { state }
}
