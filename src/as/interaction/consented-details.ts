/**
 * RFC 9396 on the consent page: what the person reads of each requested
 * authorization detail, and how their consent to it is remembered.
 *
 * Remembered consent keeps scopes; each approved entry is kept beside them
 * as `authorization_details <digest of its canonical JSON>`. A scope never
 * contains a space (RFC 6749 3.3), so the two can never be confused, and an
 * entry with any other value (another amount, another account) has another
 * digest: the person is asked again.
 */
import { type AuthorizationDetail, type AuthorizationDetails, detailDigest } from '../authorization-details/authorization-details.js'
import type { DetailsView } from '../views/consent.js'
import { visibleJson, visibleText } from '../views/visible-text.js'
import type { AuthorizationRequest } from './authorization-request.js'

const DETAIL_CONSENT_PREFIX = 'authorization_details '

/** At most this many approved entries are remembered per person and client: the oldest are forgotten (and asked again). */
const MAX_REMEMBERED_DETAILS = 32

/** What a remembered consent must hold for this request to need no consent page: its scopes and each detail's digest. */
export function consentedItems(request: Pick<AuthorizationRequest, 'scopes' | 'authorizationDetails'>): string[] {
  return [...request.scopes, ...(request.authorizationDetails ?? []).map((d) => DETAIL_CONSENT_PREFIX + detailDigest(d))]
}

/** The remembered consent after this one: every scope, and the most recent {@link MAX_REMEMBERED_DETAILS} entries. */
export function rememberedConsent(before: readonly string[], request: Pick<AuthorizationRequest, 'scopes' | 'authorizationDetails'>): string[] {
  const all = [...new Set([...before, ...consentedItems(request)])]
  const details = all.filter((s) => s.startsWith(DETAIL_CONSENT_PREFIX))
  const forget = new Set(details.slice(0, Math.max(0, details.length - MAX_REMEMBERED_DETAILS)))
  return all.filter((s) => !forget.has(s))
}

/**
 * One entry as the page shows it: indented JSON, whole, every hidden character visible as an escape.
 * Never cut or elided: what the person does not see, they would approve unseen (the parameter is at
 * most 8 KiB, so whole is bounded).
 */
export function detailText(detail: AuthorizationDetail): string {
  return visibleJson(JSON.stringify(detail, null, 2))
}

/** The requested entries grouped by type, in request order, for the consent page. */
export function describeDetails(details: AuthorizationDetails | null): DetailsView[] {
  const byType = new Map<string, string[]>()
  for (const d of details ?? []) {
    const texts = byType.get(d.type) ?? []
    texts.push(detailText(d))
    byType.set(d.type, texts)
  }
  return [...byType].map(([type, entries]) => ({ type: visibleText(type), entries }))
}
