/**
 * `profile: fapi2`, per client or for every client
 * (`authorization_server.profile`): the FAPI 2.0 Security Profile's rules.
 * What a profile implies is set on the client here; a setting that says
 * otherwise is a problem at load naming the rule, never quietly overridden,
 * and what bearward cannot do under the profile is refused the same way.
 *
 * @see https://openid.net/specs/fapi-security-profile-2_0-final.html#section-5.3.2
 */
import type { Node } from 'yaml'
import type { ClientType, SecurityProfile, TokenEndpointAuthMethod } from '../validated-config.js'
import type { MapView, Reader } from '../reader.js'
import { enumAt } from '../contract.js'

export const SECURITY_PROFILES = enumAt<SecurityProfile>('#/$defs/client/properties/profile')

/** FAPI 2.0 5.3.2.1: client authentication by key (private_key_jwt) or certificate (mTLS) only. */
export const FAPI2_AUTH_METHODS: readonly TokenEndpointAuthMethod[] = ['private_key_jwt', 'tls_client_auth', 'self_signed_tls_client_auth']

/** FAPI 2.0 5.3.2.2: an authorization code lives at most 60 seconds. */
export const FAPI2_MAX_CODE_TTL_SEC = 60

/** What a client's settings say, as read, for the profile's check. */
export interface ProfileSubject {
  type: ClientType | undefined
  /** The method in effect (the default when none is written). */
  method: TokenEndpointAuthMethod
  dpopBound: boolean
  certificateBound: boolean
  requirePkce: boolean
  allowPlainPkce: boolean
  requirePushedAuthorizationRequests: boolean
  /** A `kind: workload` assertion issuer maps a subject to it. */
  workload: boolean
}

/**
 * The client's profile: its own `profile`, else the server's. A client's
 * own `profile` can only name a profile (there is one), so it can never
 * step out of the server's.
 */
export function readClientProfile(r: Reader, c: MapView, serverProfile: SecurityProfile | null): SecurityProfile | undefined {
  const own = c.maybe('profile', r.oneOf(SECURITY_PROFILES, { what: 'a security profile' }))
  return own ?? serverProfile ?? undefined
}

/**
 * Report every setting of client `c` that contradicts `profile: fapi2`,
 * naming the rule. `source` is where the profile was set, as the message
 * shows it (`profile: fapi2` or `authorization_server.profile: fapi2`).
 */
export function checkFapi2Client(r: Reader, c: MapView, s: ProfileSubject, source: string): void {
  const rule = (what: string, section: string) => `\`${source}\` ${what} (FAPI 2.0 Security Profile ${section})`
  if (s.type === 'public') {
    r.problem(c.get('type'), c.pathOf('type'), rule('takes confidential clients only: make it `type: confidential` with a key or a certificate', '5.3.2.1'))
  } else if (s.type !== undefined && !FAPI2_AUTH_METHODS.includes(s.method)) {
    const written = c.has('token_endpoint_auth_method') ? `\`${s.method}\`` : `the default \`${s.method}\``
    r.problem(
      c.get('token_endpoint_auth_method') ?? c.node,
      c.pathOf('token_endpoint_auth_method'),
      rule(`authenticates clients with \`private_key_jwt\`, \`tls_client_auth\` or \`self_signed_tls_client_auth\` only, not ${written}`, '5.3.2.1'),
    )
  }
  if (s.workload) {
    r.problem(
      c.get('client_id'),
      c.pathOf('client_id'),
      rule(
        "accepts client assertions whose `aud` is the issuer only; a workload issuer's token follows that issuer's rules: map no workload subject to this client",
        '5.3.2.1',
      ),
    )
  }
  if (!s.requirePkce) {
    r.problem(c.get('require_pkce'), c.pathOf('require_pkce'), rule('requires PKCE: remove `require_pkce: false`', '5.3.2.2'))
  }
  if (s.allowPlainPkce) {
    r.problem(c.get('allow_plain_pkce'), c.pathOf('allow_plain_pkce'), rule('takes PKCE with S256 only: remove `allow_plain_pkce: true`', '5.3.2.2'))
  }
  if (c.has('require_pushed_authorization_requests') && !s.requirePushedAuthorizationRequests) {
    r.problem(
      c.get('require_pushed_authorization_requests'),
      c.pathOf('require_pushed_authorization_requests'),
      rule('requires pushed authorization requests: remove `require_pushed_authorization_requests: false`', '5.3.2.2'),
    )
  }
  if (!s.dpopBound && !s.certificateBound) {
    r.problem(
      c.node,
      c.pathOf('dpop_bound_access_tokens'),
      rule(
        'issues sender-constrained tokens only: set `dpop_bound_access_tokens: true` (DPoP) or `tls_client_certificate_bound_access_tokens: true` (mutual TLS)',
        '5.3.2.1',
      ),
    )
  }
}

/**
 * Report what contradicts `authorization_server.profile: fapi2` at the
 * server: a code lifetime over 60 s, `par.required: false`, and ways in for
 * clients nobody configured (registration, metadata documents), which are
 * public clients the profile does not take.
 */
export function checkFapi2Server(
  r: Reader,
  as: MapView,
  o: { codeTtlSec: number; parRequired: boolean; parRequiredNode: Node | undefined; registration: boolean; documents: boolean },
): void {
  const source = 'authorization_server.profile: fapi2'
  const rule = (what: string, section: string) => `\`${source}\` ${what} (FAPI 2.0 Security Profile ${section})`
  if (o.codeTtlSec > FAPI2_MAX_CODE_TTL_SEC) {
    r.problem(as.get('code_ttl'), as.pathOf('code_ttl'), rule(`lets an authorization code live at most ${FAPI2_MAX_CODE_TTL_SEC}s`, '5.3.2.2'))
  }
  if (o.parRequiredNode !== undefined && !o.parRequired) {
    r.problem(o.parRequiredNode, `${as.pathOf('par')}.required`, rule('requires pushed authorization requests: remove `required: false`', '5.3.2.2'))
  }
  if (o.registration) {
    r.problem(
      as.get('registration'),
      as.pathOf('registration'),
      rule('takes only configured confidential clients with a key or a certificate; self-registered clients are public: turn `registration` off', '5.3.2.1'),
    )
  }
  if (o.documents) {
    r.problem(
      as.get('client_id_metadata_documents'),
      as.pathOf('client_id_metadata_documents'),
      rule(
        'takes only configured confidential clients with a key or a certificate; clients known by metadata documents are public: turn `client_id_metadata_documents` off',
        '5.3.2.1',
      ),
    )
  }
}
