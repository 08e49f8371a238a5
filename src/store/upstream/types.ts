/** What a sign-in at an upstream identity provider resumes once the person is back. */
export type UpstreamContinuation =
  | { kind: 'authorize'; request: string }
  | { kind: 'device'; userCode: string }
  | { kind: 'account' }
  /** The approval page (issue #41) of approval `id`. */
  | { kind: 'approve'; id: string }

/**
 * A sign-in sent to an upstream identity provider and not yet back, under
 * the hash of its `state` (docs/identity-providers.md). Single use.
 */
export interface UpstreamLoginRecord {
  /** Identity provider id (`identity_providers[].id`). */
  provider: string
  /** OIDC Core 3.1.2.1 `nonce` sent; the id_token must carry it. */
  nonce: string
  /** RFC 7636 code_verifier for the code exchange. */
  codeVerifier: string
  continuation: UpstreamContinuation
  /** Epoch seconds. */
  expiresAt: number
}

/** The claims of a person who signed in at an upstream provider, under their bearward `sub`. */
export interface UpstreamPersonRecord {
  provider: string
  /** The provider's `sub` for the person. */
  upstreamSub: string
  /** Mapped claims (bearward claim name → value) as of the latest sign-in. */
  claims: Record<string, unknown>
  /** Epoch seconds of that sign-in. */
  updatedAt: number
}

/** Sign-ins at upstream identity providers, and the people who signed in there. */
export interface UpstreamStore {
  /** Keep a sign-in sent to an upstream provider, under the hash of its `state`, for `ttlSec`. */
  putLogin(stateHash: string, record: UpstreamLoginRecord, ttlSec: number): Promise<void>
  /** Atomic get-and-delete: of N concurrent calls one gets the record; null when unknown, used or expired. */
  takeLogin(stateHash: string): Promise<UpstreamLoginRecord | null>
  /** Remember an upstream person's claims under their bearward `sub`; replaces the earlier record. */
  putPerson(sub: string, record: UpstreamPersonRecord, ttlSec: number): Promise<void>
  getPerson(sub: string): Promise<UpstreamPersonRecord | null>
  /**
   * The `sub`s of the remembered people whose latest claims hold `email` (compared lower-cased),
   * on every instance, as long as their records are kept.
   */
  subsByEmail(email: string): Promise<string[]>
}
