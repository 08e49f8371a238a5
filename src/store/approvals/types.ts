/**
 * Approvals (issue #41): a person confirms one action an agent asked for, on bearward's approval
 * page. Two kinds share the record, the store and the page:
 * - `mcp_tool`: the gateway held a `tools/call` of a tool whose rule says `approval: required`;
 *   the approval is bound to the call's canonical form (`binding`), and the gateway forwards the
 *   retried call once (`reuse: once`) or until `expiresAt` (`reuse: ttl`).
 * - `ciba`: a client asked at `/bc-authorize` (OpenID CIBA Core 1.0) and polls `/token` with the
 *   `auth_req_id`; the approval's id is that request's handle.
 *
 * Every instance sees a decision at once (Redis in production). Times are epoch seconds, judged
 * against the injected clock.
 */

export type ApprovalKind = 'mcp_tool' | 'ciba'

/**
 * `pending` until the person decides or it expires; `used` once a `reuse: once` approval passed a call (or a CIBA grant
 * issued tokens). `expired` is never stored: a read reports a pending or approved record whose `expiresAt` has passed so.
 */
export type ApprovalStatus = 'pending' | 'approved' | 'denied' | 'used' | 'cancelled' | 'expired'

/** How long a record is kept after its `expiresAt`, so the account page lists given approvals (and CIBA can say expired_token). */
export const APPROVAL_KEEP_SEC = 86_400

/** What the approval page shows and what the approval is bound to. */
export type ApprovalSubject =
  | {
      readonly kind: 'mcp_tool'
      /** The route's name (config), so a call on another route never matches. */
      readonly route: string
      readonly tool: string
      /** The arguments as canonical JSON (RFC 8785): what the page shows, escaped. */
      readonly argumentsJson: string
      readonly reuse: 'once' | 'ttl'
    }
  | {
      readonly kind: 'ciba'
      readonly scopes: readonly string[]
      /** Printable, at most 64 characters (validated at /bc-authorize). */
      readonly bindingMessage: string | null
      /** RFC 9396 authorization_details as validated (JSON text), or null. */
      readonly authorizationDetailsJson: string | null
    }

/** What the deciding session must show (the approval page checks it; every instance reads it from the record). */
export interface ApprovalSignIn {
  /** acr values one of which the session must meet (src/tokens/acr.ts meetsAcr); empty: any sign-in. */
  readonly acr: readonly string[]
  /** The sign-in may be at most this old (seconds) when the person decides; null: any age. */
  readonly maxAgeSec: number | null
}

export interface ApprovalRecord {
  /** Random (crypto/random), URL-safe; the page's URL carries it; for CIBA it is not the auth_req_id (that is hashed). */
  readonly id: string
  readonly kind: ApprovalKind
  /** The person who must decide (the token's `sub`, or the CIBA hint's person). */
  readonly sub: string
  readonly clientId: string
  /** The grant the calling token belongs to (mcp_tool); null for CIBA until tokens are issued. */
  readonly grantId: string | null
  /** SHA-256 (base64url) of what the approval is bound to: equal bindings share one pending approval. */
  readonly binding: string
  readonly subject: ApprovalSubject
  readonly signIn: ApprovalSignIn
  readonly status: ApprovalStatus
  readonly createdAt: number
  /** Pending: when the request lapses. Approved with `reuse: ttl`: until when calls pass. */
  readonly expiresAt: number
  readonly decidedAt: number | null
  /** The `acr` of the session that decided (audit, and CIBA's id_token). */
  readonly decidedAcr: string | null
}

export interface NewApproval {
  readonly id: string
  readonly kind: ApprovalKind
  readonly sub: string
  readonly clientId: string
  readonly grantId: string | null
  readonly binding: string
  readonly subject: ApprovalSubject
  readonly signIn: ApprovalSignIn
  readonly expiresAt: number
}

export type OpenResult =
  | { readonly outcome: 'created'; readonly record: ApprovalRecord }
  /** A pending one with the same sub, client, grant and binding: the retry gets it again. */
  | { readonly outcome: 'pending'; readonly record: ApprovalRecord }
  /** Bounded per person and per client: the flood is refused. */
  | { readonly outcome: 'too_many' }

export interface ApprovalStore {
  /**
   * Atomic: return the pending approval with this (sub, clientId, grantId, binding), else create
   * `approval`, unless the person already has `maxPerPerson` pending or the client `maxPerClient`.
   */
  open(approval: NewApproval, now: number, maxPerPerson: number, maxPerClient: number): Promise<OpenResult>
  get(id: string, now: number): Promise<ApprovalRecord | null>
  /**
   * Atomic pending → approved | denied, only by `sub`; null when not pending, expired or not theirs. For `approved`,
   * `expiresAt` becomes `approvedUntil` (the desk passes now + ttl: how long the retry may come, or calls pass with reuse ttl).
   */
  decide(id: string, sub: string, decision: 'approved' | 'denied', acr: string | null, approvedUntil: number, now: number): Promise<ApprovalRecord | null>
  /**
   * Atomic: find an approved, unexpired approval for (sub, clientId, grantId, binding) and pass it:
   * a `reuse: once` one becomes `used` (of two concurrent calls exactly one passes). Null: none.
   */
  consume(sub: string, clientId: string, grantId: string | null, binding: string, now: number): Promise<ApprovalRecord | null>
  /** Atomic approved → used by id (CIBA: tokens are issued once). Null when not approved. */
  take(id: string, now: number): Promise<ApprovalRecord | null>
  /** The person's approvals, pending and given, newest first (account page). */
  listForPerson(sub: string, now: number, limit: number): Promise<ApprovalRecord[]>
  /** Cancel every pending or approved approval of a grant (revocation) or of a person (withdraw access). */
  cancelGrant(grantId: string, now: number): Promise<number>
  cancelPerson(sub: string, now: number): Promise<number>
}
