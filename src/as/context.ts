import type { FailureReporting } from '../http/failure.js'
import type { AuthorizationDetailsTypes } from './authorization-details/authorization-details.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AuthorizationServerConfig, ClientConfig, UserConfig } from '../config/validated-config.js'
import type { PersonDirectory } from './people/directory.js'
import type { FaceDeps, RequestContext } from '../context.js'
import type { SecretVerifier } from '../crypto/secret.js'
import type { DpopVerifier } from '../dpop/verify-proof.js'
import type { ClientAddress } from '../http/trusted-proxies.js'
import type { KeySet } from '../keys/keyset.js'
import type { JwtIssuer, JwtVerifier } from '../tokens/verify-jwt.js'
import type { AssertionIssuers } from './assertion-issuers.js'
import type { ClientKeySets } from './client-keys.js'
import type { TrustedTokens } from './trusted-tokens.js'
import type { UpstreamProviders } from './identity-providers/providers.js'
import type { TotpSecrets } from './totp/secrets.js'
import type { SessionEnds } from './sessions/session-ends.js'
import type { BackchannelLogoutDelivery } from './backchannel-logout/deliver.js'
import type { CredentialChanges } from './credential-changes.js'
import type { ApprovalDesk } from './approvals/desk.js'
import type { CibaRuntime } from './ciba/runtime.js'

/**
 * Everything the authorization server's endpoints read, precomputed once per
 * Runtime (lookups by client_id and username are maps, not scans).
 */
export interface AsContext extends FaceDeps {
  readonly as: AuthorizationServerConfig
  readonly keys: KeySet
  /** This server as a JWT issuer: the gateway's `self` issuer, the same object (src/tokens/own-access-token.ts). */
  readonly ownIssuer: JwtIssuer
  /** Verifies our JWT access tokens with `ownIssuer`, as the gateway does. */
  readonly jwtVerifier: JwtVerifier
  /** The issuer identifier: exactly `public_url` (RFC 8414 2, RFC 9207). */
  readonly issuer: string
  /** The configured clients only; look clients up with `findClient`. */
  readonly clients: ReadonlyMap<string, ClientConfig>
  /**
   * The one client lookup: configured clients, then registered ones (RFC
   * 7591) when registration is on. Rejects with StoreUnavailableError.
   */
  findClient(clientId: string): Promise<ClientConfig | undefined>
  /** Release what the client lookup holds (metadata document connections), at Runtime close. */
  closeClientLookup(): Promise<void>
  /** The public keys of `private_key_jwt` clients, inline or fetched from their `jwks_uri` (client-keys.ts). */
  readonly clientKeys: ClientKeySets
  /** Issuers whose JWTs are RFC 7523 assertions: ID-JAGs and workload tokens (`assertion_issuers`). */
  readonly assertionIssuers: AssertionIssuers
  /** Access tokens of the trusted issuers (`issuers[]`), for token exchange. */
  readonly trustedTokens: TrustedTokens
  /** The YAML users only; look people up with `people` (YAML and admin-managed people, disabled ones refused). */
  readonly users: ReadonlyMap<string, UserConfig>
  readonly people: PersonDirectory
  /** Upstream OpenID Connect providers (`identity_providers`), discovered in the background. */
  readonly upstream: UpstreamProviders
  /** Verifies client secrets and passwords (scrypt; repeat successes memoized). */
  readonly secrets: SecretVerifier
  /** Seals and opens authenticator-app secrets in the store (`mfa.totp_encryption_key`, totp/secrets.ts). */
  readonly totpSecrets: TotpSecrets
  /** Cookies get `Secure` when public_url is https. */
  readonly secureCookies: boolean
  /** Audiences of the configured routes: the values an RFC 8707 `resource` may name. */
  readonly resources: ReadonlySet<string>
  /** DPoP proof checks (RFC 9449): at the token endpoint (400s) and at UserInfo (401s with a DPoP challenge). */
  readonly dpop: { readonly token: DpopVerifier; readonly resource: DpopVerifier }
  /** The client's address for the per-address throttles, from `gateway.trusted_proxies` (built once, not per request). */
  readonly clientAddress: ClientAddress
  /** How the authorization server's failures are logged and counted (see http/failure.ts). */
  readonly failures: FailureReporting
  /** Told of every ending of sessions (src/as/sessions/end-sessions.ts): back-channel logout, the Shared Signals transmitter. */
  readonly sessionEnds: SessionEnds
  /** Sends logout tokens to clients when sessions end (OIDC Back-Channel Logout 1.0), from the store's queue. */
  readonly backchannelLogout: BackchannelLogoutDelivery
  /** Told of every change of a person's factors (credential-changes.ts): the Shared Signals transmitter. */
  readonly credentialChanges: CredentialChanges
  /** Approvals (issue #41, docs/approvals.md): open, decide, pass, cancel; its onDecided listeners run here. */
  readonly approvals: ApprovalDesk
  /** OpenID CIBA Core 1.0 (ciba/runtime.ts): ping deliveries and the login_hint email index. */
  readonly ciba: CibaRuntime
  /** RFC 9396: the declared authorization details types, their schemas compiled once for this Runtime. */
  readonly authorizationDetailsTypes: AuthorizationDetailsTypes
}

/** One authorization-server endpoint. */
export type AsHandler = (req: IncomingMessage, res: ServerResponse, ctx: RequestContext, as: AsContext) => Promise<void>
