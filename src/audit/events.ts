/**
 * What an audit event may say (issue #42, docs/operating.md "Audit trail").
 * The names are fixed; the fields are typed so that a secret has no place to
 * go: an actor and a subject are identifiers of a kind (a person's `sub`, a
 * client_id, a grant id, a token's jti), a refusal's reason is a code, never
 * free text. A token can be named only through {@link tokenByJti}, which
 * takes its claims, not its compact form.
 */
import { isTokenShaped } from '../crypto/random.js'

/** Every event the trail can carry, and nothing else. */
export const AUDIT_EVENTS = [
  'signin.succeeded',
  'signin.failed',
  'factor.added',
  'factor.removed',
  'grant.created',
  'grant.withdrawn',
  'grant.revoked',
  'token.revoked',
  'client.created',
  'client.updated',
  'client.deleted',
  'client.secret_rotated',
  'client.registered',
  'person.created',
  'person.updated',
  'person.disabled',
  'person.deleted',
  'session.ended',
  'admin.denied',
  'config.reloaded',
  'config.refused',
  'approval.requested',
  'approval.approved',
  'approval.denied',
] as const

export type AuditEventName = (typeof AUDIT_EVENTS)[number]

/** The marker that opens a process's chain (not an event anyone records). */
export const CHAIN_START = 'audit.started'

declare const jtiBrand: unique symbol
/** A token's `jti`, as only {@link tokenByJti} makes one. */
export type Jti = string & { readonly [jtiBrand]: true }

/**
 * A token named by its jti. It takes the token's claims (a verified
 * payload, a stored record), so a compact token passed by mistake does not
 * type-check; and a value that looks like a JWT is refused at run time too.
 */
export function tokenByJti(claims: { readonly jti: string }): { kind: 'token'; jti: Jti } {
  if (looksLikeToken(claims.jti)) throw new TypeError('audit: a jti was expected, not a token')
  return { kind: 'token', jti: claims.jti as Jti }
}

/** Who did it. `admin` is a person or client acting through the admin API or pages. */
export type AuditActor =
  | { readonly kind: 'person'; readonly id: string }
  | { readonly kind: 'client'; readonly id: string }
  | { readonly kind: 'admin'; readonly id: string; readonly as: 'person' | 'client' }
  /** bearward itself (a reload, an expiry, a provider's back-channel logout). */
  | { readonly kind: 'system' }
  /** Someone not (yet) known: a failed sign-in, a refused registration. */
  | { readonly kind: 'anonymous' }

/** What it was done to. A username tried at a failed sign-in is a `person` subject. */
export type AuditSubject =
  | { readonly kind: 'person'; readonly id: string }
  | { readonly kind: 'client'; readonly id: string }
  | { readonly kind: 'grant'; readonly id: string }
  | { readonly kind: 'session'; readonly id: string }
  /** An approval (issue #41, docs/approvals.md): its id, which the approval page's URL carries. */
  | { readonly kind: 'approval'; readonly id: string }
  | { readonly kind: 'factor'; readonly id: string; readonly person: string }
  | { readonly kind: 'token'; readonly jti: Jti }
  | { readonly kind: 'config'; readonly digest: string }
  | { readonly kind: 'none' }

export type AuditOutcome = 'success' | 'failure'

/** A reason code: lower-case words joined by `_`, `.` or `:`, as `invalid_grant` or `mfa_required`. */
export const REASON_CODE = /^[a-z0-9][a-z0-9_.:-]{0,63}$/

/** What a caller records; time, chain and hash are the trail's. */
export interface AuditRecord {
  readonly event: AuditEventName
  readonly actor: AuditActor
  readonly subject: AuditSubject
  /** The OAuth client the action went through, when there was one. */
  readonly clientId?: string | null
  /** The caller's address (as the throttles see it: behind a trusted proxy, the forwarded one). */
  readonly address?: string | null
  readonly userAgent?: string | null
  readonly outcome: AuditOutcome
  /** For a refusal: a code (see {@link REASON_CODE}), never a message that might quote input. */
  readonly reason?: string
}

/** Longest user agent kept (the rest is cut): the line stays small and bounded. */
export const USER_AGENT_MAX = 256
/** Longest identifier kept in actor and subject ids. */
export const ID_MAX = 256

const JWT_SHAPE = /^[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*$/

/** A compact JWS/JWT (three base64url parts): what the trail never writes. */
export function looksLikeJwt(value: string): boolean {
  return JWT_SHAPE.test(value)
}

/**
 * A token value of ours: a compact JWT, or a random token (an opaque access token, a refresh
 * token, a code: 32 bytes, base64url). A jti is 16 bytes, so it is never either: a value so shaped
 * given as a jti is a token pasted by mistake, and the trail must not keep it.
 */
export function looksLikeToken(value: string): boolean {
  return looksLikeJwt(value) || isTokenShaped(value)
}
