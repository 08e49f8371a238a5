/** RFC 7591 2: the metadata a registered client is known by, as the server accepted it. */
export interface RegisteredClientMetadata {
  redirect_uris: string[]
  token_endpoint_auth_method: 'none' | 'client_secret_basic' | 'client_secret_post' | 'private_key_jwt'
  /** private_key_jwt (RFC 7523 2.2): the client's public keys, inline (a JWK Set) ... */
  jwks?: { keys: Array<Record<string, unknown>> }
  /** ... or where it publishes them (https). */
  jwks_uri?: string
  /** `client_credentials` only for clients an operator created through the admin API (client-metadata.ts `extraGrants`). */
  grant_types: Array<'authorization_code' | 'refresh_token' | 'urn:openid:params:grant-type:ciba' | 'client_credentials'>
  /** `code` with the authorization_code grant; empty without it (RFC 7591 2.1). */
  response_types: ['code'] | []
  client_name?: string
  client_uri?: string
  logo_uri?: string
  policy_uri?: string
  tos_uri?: string
  scope?: string
  contacts?: string[]
  software_id?: string
  software_version?: string
  post_logout_redirect_uris?: string[]
  /** RFC 9126 6: its authorization requests must be pushed to /par. */
  require_pushed_authorization_requests?: boolean
  /** RFC 9101 10.5: its authorization requests must be request objects signed with its keys (private_key_jwt only). */
  require_signed_request_object?: boolean
  /** OIDC Back-Channel Logout 1.0 2.2: where logout tokens are POSTed (https, a public host). */
  backchannel_logout_uri?: string
  /** OIDC Back-Channel Logout 1.0 2.2: the client needs `sid` in logout tokens (only true is kept). */
  backchannel_logout_session_required?: boolean
  /** OpenID CIBA Core 1.0 4: `poll` or `ping` (only with the CIBA grant). */
  backchannel_token_delivery_mode?: 'poll' | 'ping'
  /** OpenID CIBA Core 1.0 4: where a ping client is notified (https, a public host). */
  backchannel_client_notification_endpoint?: string
  /** RFC 9396 10: the authorization details types it may request (each declared by the server). */
  authorization_details_types?: string[]
}

/** What {@link ClientStore.putWithin} did. */
export interface ClientSeat {
  /** True when the record was stored. */
  stored: boolean
  /** Live registrations after the call (the new one included when stored). */
  live: number
  /** When refused: epoch ms at which the first live registration expires (room again, unless deleted sooner). */
  freeAtMs: number
}

/** A client that registered itself (RFC 7591), kept until unused for `client_ttl`. */
export interface RegisteredClientRecord {
  clientId: string
  /** scrypt hash of the client secret; null for a public (`none`) client. */
  secretHash: string | null
  /** SHA-256 of the RFC 7592 registration access token. */
  registrationTokenHash: string
  metadata: RegisteredClientMetadata
  /** Epoch seconds of the registration (`client_id_issued_at`). */
  issuedAt: number
  /** Epoch seconds after which the client is forgotten (moved on by ClientStore.touch). */
  expiresAt: number
}

/** Clients that registered themselves (RFC 7591), forgotten after `client_ttl` unused. */
export interface ClientStore {
  /** Store a new registration; it lives until `record.expiresAt`. */
  put(record: RegisteredClientRecord): Promise<void>
  /** The registration, or null when unknown, deleted or past its expiry. */
  get(clientId: string): Promise<RegisteredClientRecord | null>
  /** Move a live registration's expiry to `expiresAt` (it was used); no effect on an unknown or deleted one. */
  touch(clientId: string, expiresAt: number): Promise<void>
  /** Forget a registration; false when there was none. */
  delete(clientId: string): Promise<boolean>
  /**
   * Store a new registration only while fewer than `maxLive` registrations
   * are live (unexpired, undeleted), counted over every instance; atomic, so
   * of N concurrent calls at the cap none gets past it.
   */
  putWithin(record: RegisteredClientRecord, maxLive: number): Promise<ClientSeat>
  /** How many registrations are live. */
  count(): Promise<number>
  /** Up to `limit` live registrations by client id (UTF-8 byte order), those after `after` (exclusive): the admin API's pages. */
  list(after: string | null, limit: number): Promise<RegisteredClientRecord[]>
}
