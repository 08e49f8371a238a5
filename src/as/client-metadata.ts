/**
 * Client metadata a client states about itself (RFC 7591 2): in a dynamic
 * registration request, or in a Client ID Metadata Document. One validator
 * for both, so a client cannot get past one rule by choosing the other door.
 *
 * Rules that matter for safety:
 * - redirect URIs and post-logout redirect URIs pass `redirectUriProblem`
 *   (`src/config/client-values.ts`, the rule configured clients' follow too):
 *   printable ASCII, https, http only to a loopback host, or a private-use
 *   scheme with a dot (RFC 8252 7); no fragment, no credentials.
 * - texts (name, software id and version, contacts) pass `clientTextProblem`:
 *   no controls, line separators, bidi controls or zero-width characters.
 * - only the authorization code grant and CIBA (and refresh): a client nobody
 *   vetted gets nothing without a person's consent or approval. A CIBA-only
 *   client (OpenID CIBA Core 1.0 4) needs no redirect URI: nothing redirects.
 * - scopes within `registration.scopes` (and `openid`, `offline_access`: scope.ts); a refusal names the scope.
 * - texts people see (name, logo, links) pass the checks configured clients'
 *   do (`src/config/sections/client-metadata.ts`).
 * - `require_pushed_authorization_requests` (RFC 9126 6) and
 *   `require_signed_request_object` (RFC 9101 10.5, private_key_jwt only):
 *   a client may bind itself to the stricter requests, never loosen anything.
 * - `backchannel_logout_uri` (OIDC Back-Channel Logout 1.0 2.2): https only, no credentials or
 *   fragment, and an IP literal must be a global unicast address; a name is judged where it
 *   resolves, at delivery (the metadata-document address rules: backchannel-logout/deliver.ts).
 * - the CIBA grant (OpenID CIBA Core 1.0 4): an authenticating client, `poll` or `ping`, a ping
 *   endpoint under the `backchannel_logout_uri` rules (cibaMetadata).
 * Unknown members are ignored (RFC 7591 2: "MUST ignore").
 */
import { isIP } from 'node:net'
import { clientTextProblem, MAX_CLIENT_URI, redirectUriProblem, uriCharacterProblem } from '../config/client-values.js'
import { checkLogoUri, checkPageUri, checkPostLogoutRedirectUri } from '../config/sections/client-metadata.js'
import { InvalidClientMetadata, InvalidRedirectUri } from '../errors.js'
import { SCOPE_TOKEN } from '../config/values.js'
import { jwkSetProblem } from '../keys/jwk-set.js'
import type { RegisteredClientMetadata } from '../store/types.js'
import { strangerJwksUriProblem } from './client-keys.js'
import { specialPurposeProblem } from '../http/public-address.js'
import { CIBA_GRANT } from '../config/sections/clients.js'

const MAX_REDIRECT_URIS = 10
const MAX_TEXT = 200
const AUTH_METHODS: ReadonlySet<string> = new Set(['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'])
const GRANTS: ReadonlySet<string> = new Set(['authorization_code', 'refresh_token', CIBA_GRANT])

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function text(input: Record<string, unknown>, name: string): string | undefined {
  const value = input[name]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_TEXT)
    throw new InvalidClientMetadata(`${name} must be a non-empty string of at most ${MAX_TEXT} characters`)
  const problem = clientTextProblem(value)
  if (problem !== undefined) throw new InvalidClientMetadata(`${name} is refused: ${problem}`)
  return value
}

function uri(input: Record<string, unknown>, name: string, check: (v: string) => string | undefined): string | undefined {
  const value = input[name]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'string' || value.length > MAX_CLIENT_URI) throw new InvalidClientMetadata(`${name} must be a URI`)
  const problem = uriCharacterProblem(value) ?? check(value)
  if (problem !== undefined) throw new InvalidClientMetadata(`${name}: ${problem}`)
  return value
}

function strings(input: Record<string, unknown>, name: string, max: number): string[] | undefined {
  const value = input[name]
  if (value === undefined || value === null) return undefined
  if (!Array.isArray(value) || value.length > max || !value.every((v): v is string => typeof v === 'string' && v !== '' && v.length <= MAX_CLIENT_URI)) {
    throw new InvalidClientMetadata(`${name} must be an array of at most ${max} non-empty strings`)
  }
  for (const v of value) {
    const problem = clientTextProblem(v)
    if (problem !== undefined) throw new InvalidClientMetadata(`${name} is refused: ${problem}`)
  }
  return [...new Set(value)]
}

const MAX_JWKS_URI = 2000

/**
 * RFC 7591 2 `jwks` / `jwks_uri` of a private_key_jwt client: exactly one
 * ("MUST NOT both be present"), public keys only, the URI https without
 * credentials or fragment (it is fetched only to public addresses:
 * client-keys.ts). Other clients' keys are not kept: nothing would use them.
 */
function clientKeys(input: Record<string, unknown>, method: string): Pick<RegisteredClientMetadata, 'jwks' | 'jwks_uri'> {
  const jwks = input.jwks ?? undefined
  const jwksUri = input.jwks_uri ?? undefined
  if (jwks !== undefined && jwksUri !== undefined) throw new InvalidClientMetadata('jwks and jwks_uri must not both be present')
  if (method !== 'private_key_jwt') return {}
  if (jwksUri !== undefined) {
    if (typeof jwksUri !== 'string' || jwksUri.length > MAX_JWKS_URI) throw new InvalidClientMetadata('jwks_uri must be a URI')
    const problem = strangerJwksUriProblem(jwksUri)
    if (problem !== undefined) throw new InvalidClientMetadata(`jwks_uri must be an https URL without credentials or fragment (${problem})`)
    return { jwks_uri: jwksUri }
  }
  if (jwks === undefined) throw new InvalidClientMetadata('a private_key_jwt client needs jwks or jwks_uri')
  const problem = jwkSetProblem(jwks)
  if (problem !== undefined) throw new InvalidClientMetadata(`jwks: ${problem}`)
  return { jwks: jwks as NonNullable<RegisteredClientMetadata['jwks']> }
}

/**
 * Why a stranger's `backchannel_logout_uri` is refused at registration, or undefined: bearward
 * itself POSTs to it, so only https to a public place. A host name is checked again where it
 * resolves, at every delivery.
 */
export function strangerBackchannelUriProblem(uri: string): string | undefined {
  const basic = strangerJwksUriProblem(uri)
  if (basic !== undefined) return basic
  const host = new URL(uri).hostname
  const literal = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  return isIP(literal) !== 0 ? specialPurposeProblem(literal) : undefined
}

/**
 * OpenID CIBA Core 1.0 4: a client registering the CIBA grant authenticates (never `none`: anyone
 * could ask a person to approve), says `poll` or `ping`, and a ping client's notification endpoint
 * follows the rules of `backchannel_logout_uri` (bearward POSTs to both). Without the grant, the
 * CIBA members are refused rather than kept for nothing.
 */
function cibaMetadata(
  input: Record<string, unknown>,
  grants: readonly string[],
  method: string,
): Pick<RegisteredClientMetadata, 'backchannel_token_delivery_mode' | 'backchannel_client_notification_endpoint'> {
  const mode = input.backchannel_token_delivery_mode ?? undefined
  const endpoint = uri(input, 'backchannel_client_notification_endpoint', (v) => {
    const problem = strangerBackchannelUriProblem(v)
    return problem === undefined ? undefined : `must be an https URL of a public host, without credentials or fragment (${problem})`
  })
  if (!grants.includes(CIBA_GRANT)) {
    if (mode !== undefined || endpoint !== undefined)
      throw new InvalidClientMetadata(`backchannel_token_delivery_mode and its endpoint need the ${CIBA_GRANT} grant`)
    return {}
  }
  if (method === 'none') throw new InvalidClientMetadata('the CIBA grant needs client authentication: token_endpoint_auth_method none is refused')
  if (mode !== 'poll' && mode !== 'ping') throw new InvalidClientMetadata('backchannel_token_delivery_mode must be poll or ping')
  if (mode === 'ping' && endpoint === undefined) throw new InvalidClientMetadata('ping mode needs backchannel_client_notification_endpoint')
  if (mode === 'poll' && endpoint !== undefined) throw new InvalidClientMetadata('backchannel_client_notification_endpoint is for ping mode')
  return { backchannel_token_delivery_mode: mode, ...(endpoint === undefined ? {} : { backchannel_client_notification_endpoint: endpoint }) }
}

/** An optional boolean member (RFC 7591 2): absent or null is no opinion; anything but true or false is refused. */
function flag(input: Record<string, unknown>, name: string): boolean | undefined {
  const value = input[name]
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'boolean') throw new InvalidClientMetadata(`${name} must be true or false`)
  return value
}

/** The longest scope a registration may name (and a refusal repeat). */
const MAX_NAMED_SCOPE = 200

export interface MetadataRules {
  /** The most a self-registered client may ask for (`registration.scopes`). */
  allowedScopes: readonly string[]
  /**
   * Grants beyond the code flow: only for a client an operator creates through the admin API
   * (a stranger gets nothing without a person's consent). Absent: none.
   */
  extraGrants?: readonly 'client_credentials'[]
  /** RFC 9396 10: the authorization details types this server declares; a client may name only these. Absent: none. */
  declaredDetailsTypes?: readonly string[]
}

/**
 * The metadata to keep, or an OAuthError (invalid_redirect_uri,
 * invalid_client_metadata) naming the first problem.
 * @see https://www.rfc-editor.org/rfc/rfc7591#section-2
 */
export function validateClientMetadata(input: unknown, rules: MetadataRules): RegisteredClientMetadata {
  if (!isObject(input)) throw new InvalidClientMetadata('The client metadata must be a JSON object')

  const method = input.token_endpoint_auth_method ?? 'client_secret_basic'
  if (typeof method !== 'string' || !AUTH_METHODS.has(method)) {
    throw new InvalidClientMetadata('token_endpoint_auth_method must be none, client_secret_basic, client_secret_post or private_key_jwt')
  }
  const keys = clientKeys(input, method)
  const grants = strings(input, 'grant_types', 4) ?? ['authorization_code']
  const extraGrants: readonly string[] = rules.extraGrants ?? []
  for (const g of grants) {
    if (!GRANTS.has(g) && !extraGrants.includes(g))
      throw new InvalidClientMetadata(`grant_types may only hold ${['authorization_code', 'refresh_token', CIBA_GRANT, ...extraGrants].join(', ')}`)
  }
  const codeFlow = grants.includes('authorization_code')
  // OpenID CIBA Core 1.0 4: a CIBA client needs no code flow; the person approves on bearward's own page.
  const ownGrants = ['authorization_code', CIBA_GRANT, ...extraGrants]
  if (!grants.some((g) => ownGrants.includes(g))) throw new InvalidClientMetadata(`grant_types must include ${ownGrants.join(' or ')}`)
  // RFC 6749 4.4: the client credentials grant needs client authentication.
  if (grants.includes('client_credentials') && method === 'none') throw new InvalidClientMetadata('a public client (none) cannot use client_credentials')
  // RFC 7591 2.1: response type `code` goes with the authorization_code grant. A client without it
  // uses no response type: a `code` it asks for anyway is dropped (the server may replace
  // inconsistent values), as many registration libraries send it by default.
  const responseTypes = strings(input, 'response_types', 2) ?? ['code']
  if (responseTypes.some((r) => r !== 'code') || (codeFlow && responseTypes.length !== 1)) throw new InvalidClientMetadata('response_types may only hold code')

  // Without the code flow (CIBA or client credentials only) nothing redirects: redirect_uris may be absent or empty.
  const redirectUris = input.redirect_uris ?? (codeFlow ? undefined : [])
  if (!Array.isArray(redirectUris) || (codeFlow && redirectUris.length === 0)) throw new InvalidRedirectUri('redirect_uris must list at least one redirect URI')
  if (redirectUris.length > MAX_REDIRECT_URIS) throw new InvalidRedirectUri(`at most ${MAX_REDIRECT_URIS} redirect URIs`)
  for (const r of redirectUris) {
    if (typeof r !== 'string') throw new InvalidRedirectUri('each redirect URI must be a string')
    const problem = redirectUriProblem(r)
    if (problem !== undefined) throw new InvalidRedirectUri(problem)
  }

  const scopeText = input.scope
  let scope: string | undefined
  if (scopeText !== undefined && scopeText !== null) {
    if (typeof scopeText !== 'string') throw new InvalidClientMetadata('scope must be a space-separated string')
    const scopes = [...new Set(scopeText.split(' ').filter((s) => s !== ''))]
    // Checked before any is named: the description may only hold RFC 6749 3.3's characters, which exclude `"` and `\`.
    if (!scopes.every((s) => SCOPE_TOKEN.test(s) && s.length <= MAX_NAMED_SCOPE))
      throw new InvalidClientMetadata(`scope is not a list of scope tokens (RFC 6749 3.3) of at most ${MAX_NAMED_SCOPE} characters`)
    const refused = scopes.find((s) => !rules.allowedScopes.includes(s))
    if (refused !== undefined) {
      throw new InvalidClientMetadata(`scope \`${refused}\` is not one this server lets registered clients ask for; allowed: ${rules.allowedScopes.join(' ')}`)
    }
    scope = scopes.length > 0 ? scopes.join(' ') : undefined
  }

  // RFC 9396 10: the types the client will request, each one this server declares.
  const detailsTypes = strings(input, 'authorization_details_types', 16)
  const undeclared = detailsTypes?.find((t) => !(rules.declaredDetailsTypes ?? []).includes(t))
  if (undeclared !== undefined) throw new InvalidClientMetadata('authorization_details_types names a type this server does not declare')

  const metadata: RegisteredClientMetadata = {
    redirect_uris: [...new Set(redirectUris as string[])],
    token_endpoint_auth_method: method as RegisteredClientMetadata['token_endpoint_auth_method'],
    grant_types: grants as RegisteredClientMetadata['grant_types'],
    response_types: codeFlow ? ['code'] : [],
    ...keys,
  }
  const optional: Partial<RegisteredClientMetadata> = {
    client_name: text(input, 'client_name'),
    client_uri: uri(input, 'client_uri', checkPageUri),
    logo_uri: uri(input, 'logo_uri', checkLogoUri),
    policy_uri: uri(input, 'policy_uri', checkPageUri),
    tos_uri: uri(input, 'tos_uri', checkPageUri),
    scope,
    contacts: strings(input, 'contacts', 10),
    software_id: text(input, 'software_id'),
    software_version: text(input, 'software_version'),
    post_logout_redirect_uris: strings(input, 'post_logout_redirect_uris', MAX_REDIRECT_URIS),
    // RFC 9126 6 and RFC 9101 10.5: a client may hold itself to pushed and signed requests; only true is kept.
    require_pushed_authorization_requests: flag(input, 'require_pushed_authorization_requests') || undefined,
    require_signed_request_object: flag(input, 'require_signed_request_object') || undefined,
    backchannel_logout_uri: uri(input, 'backchannel_logout_uri', (v) => {
      const problem = strangerBackchannelUriProblem(v)
      return problem === undefined ? undefined : `must be an https URL of a public host, without credentials or fragment (${problem})`
    }),
    backchannel_logout_session_required: flag(input, 'backchannel_logout_session_required') || undefined,
    authorization_details_types: detailsTypes !== undefined && detailsTypes.length > 0 ? detailsTypes : undefined,
  }
  Object.assign(optional, cibaMetadata(input, grants, method))
  if (optional.require_signed_request_object === true && method !== 'private_key_jwt') {
    throw new InvalidClientMetadata(
      'require_signed_request_object needs token_endpoint_auth_method private_key_jwt: request objects are verified with its jwks',
    )
  }
  // A post-logout redirect URI is a redirect target like the others: the same rules, then the logout-specific ones.
  for (const r of optional.post_logout_redirect_uris ?? []) {
    const problem = redirectUriProblem(r) ?? checkPostLogoutRedirectUri(r)
    if (problem !== undefined) throw new InvalidClientMetadata(`post_logout_redirect_uris: ${problem}`)
  }
  for (const [k, v] of Object.entries(optional)) if (v !== undefined) (metadata as unknown as Record<string, unknown>)[k] = v
  return metadata
}
