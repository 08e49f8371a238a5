/**
 * `authorization_server.clients[]`: registered clients (RFC 6749 2).
 * Public clients never have a secret and always use PKCE with rotated refresh
 * tokens (RFC 9700 2.1.1, 4.14.2); confidential clients always have one.
 */
import { readClientRateLimits } from './route-rate-limits.js'
import type { Node } from 'yaml'
import { isIP } from 'node:net'
import type {
  AssertionIssuerConfig,
  CibaClientConfig,
  ClientConfig,
  ClientType,
  GrantType,
  JwkSetDocument,
  SecurityProfile,
  TlsClientAuthName,
  TokenEndpointAuthMethod,
} from '../validated-config.js'
import { ipText } from '../../http/der.js'
import { canonicalDistinguishedName } from '../../http/distinguished-name.js'
import { parseIPv6 } from '../../http/trusted-proxies.js'
import { jwkSetProblem } from '../../keys/jwk-set.js'
import { checkSecretHashShape } from '../hash-format.js'
import { demoSecretOf } from '../demo.js'
import type { MapView, Reader } from '../reader.js'
import { suggest } from '../suggest.js'
import { UniqueSet } from '../unique.js'
import { checkOrigin, parseAbsoluteUrl } from '../values.js'
import { clientTextProblem, redirectUriProblem } from '../client-values.js'
import { checkBackchannelLogoutUri, readClientMetadata } from './client-metadata.js'
import { checkFapi2Client, readClientProfile } from './security-profile.js'
import { enumAt, keysAt } from '../contract.js'

export const CLIENT_KEYS = keysAt('#/$defs/client')
const TOKEN_EXCHANGE_KEYS = keysAt('#/$defs/client/properties/token_exchange')

export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer'

/** Short names a config may write for a grant type. */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange'

/** OpenID CIBA Core 1.0 10.1: the backchannel authentication grant. */
export const CIBA_GRANT = 'urn:openid:params:grant-type:ciba'

/** Short names a config may write for a grant type. */
const GRANT_ALIASES: Readonly<Record<string, GrantType>> = {
  ciba: CIBA_GRANT,
  device_code: DEVICE_CODE_GRANT,
  'jwt-bearer': JWT_BEARER_GRANT,
  'token-exchange': TOKEN_EXCHANGE_GRANT,
}

/** The grant types of the schema's enum, less the shorthands it also lists. */
export const GRANT_TYPES: readonly GrantType[] = enumAt<GrantType>('#/$defs/client/properties/grant_types').filter((g) => !(g in GRANT_ALIASES))

const CLIENT_TYPES = enumAt<ClientType>('#/$defs/client/properties/type')
const AUTH_METHODS = enumAt<TokenEndpointAuthMethod>('#/$defs/client/properties/token_endpoint_auth_method')

const REFUSED_GRANTS: Readonly<Record<string, string>> = {
  password: 'the `password` grant is not supported: RFC 9700 2.4 forbids the resource owner password credentials grant',
  implicit: 'the `implicit` grant is not supported: RFC 9700 2.1.2 forbids issuing tokens in the authorization response',
  token: 'the `implicit` grant is not supported: RFC 9700 2.1.2 forbids issuing tokens in the authorization response',
}

/** RFC 6749 A.1: client_id is VSCHAR; spaces are refused too, they only cause grief in Basic auth. */
const CLIENT_ID = /^[\x21-\x7e]+$/

const HASH_HINT = "; create one with `printf '%s' SECRET | bearward hash-secret`"

/**
 * @param workloadClients client ids a `kind: workload` assertion issuer maps a subject to: such a
 *   `private_key_jwt` client may have no keys of its own (the platform's token authenticates it).
 */
export function readClients(
  r: Reader,
  node: Node,
  path: string,
  knownScopes: ReadonlySet<string>,
  workloadClients: ReadonlySet<string> = new Set(),
  serverProfile: SecurityProfile | null = null,
): ClientConfig[] {
  const clients: ClientConfig[] = []
  const ids = new UniqueSet(r, 'client_id')
  for (const item of r.items(node, path) ?? []) {
    const c = r.map(item.node, item.path, CLIENT_KEYS)
    if (c === undefined) continue
    const { clientId, client } = readClient(r, c, knownScopes, workloadClients, serverProfile)
    if (clientId !== undefined) ids.add(clientId, c.get('client_id'), c.pathOf('client_id'))
    if (client !== undefined) clients.push(client)
  }
  return clients
}

function readClient(
  r: Reader,
  c: MapView,
  knownScopes: ReadonlySet<string>,
  workloadClients: ReadonlySet<string>,
  serverProfile: SecurityProfile | null,
): { clientId: string | undefined; client: ClientConfig | undefined } {
  const clientId = c.req('client_id', r.str({ check: (v) => (CLIENT_ID.test(v) ? undefined : 'a client_id is printable ASCII without spaces') }))
  const type = c.req('type', r.oneOf(CLIENT_TYPES, { what: 'a client type' }), ' (`confidential` or `public`)')
  const name = c.opt('name', r.str({ check: clientTextProblem }), clientId ?? '')
  const metadata = readClientMetadata(r, c)

  // private_key_jwt (RFC 7523 2.2): the client proves itself with its key, so it has keys and no secret.
  const method = c.maybe('token_endpoint_auth_method', r.oneOf(AUTH_METHODS))
  const usesKeys = type === 'confidential' && (method === 'private_key_jwt' || method === 'self_signed_tls_client_auth')
  // RFC 8705 2: the client proves itself with its certificate, so it has no secret.
  const usesCertificate = type === 'confidential' && (method === 'tls_client_auth' || method === 'self_signed_tls_client_auth')
  const keys = readClientKeys(r, c, usesKeys, clientId !== undefined && workloadClients.has(clientId), method)
  const tlsClientAuth = readTlsClientAuthName(r, c, type === 'confidential' && method === 'tls_client_auth')
  const noSecret = usesKeys || usesCertificate
  const secretHash = type === 'public' || noSecret ? undefined : c.maybe('secret_hash', r.str({ check: checkSecretHashShape }))
  if (type === 'public' && c.has('secret_hash')) {
    r.problem(c.get('secret_hash'), c.pathOf('secret_hash'), 'a public client has no secret: remove `secret_hash`, or make the client `type: confidential`')
  }
  if (noSecret && c.has('secret_hash')) {
    r.problem(c.get('secret_hash'), c.pathOf('secret_hash'), `a \`${method}\` client authenticates with its key, not a secret: remove \`secret_hash\``)
  }
  if (type === 'confidential' && !noSecret && !c.has('secret_hash')) {
    r.problem(
      c.node,
      c.pathOf('secret_hash'),
      `a confidential client needs \`secret_hash\`${HASH_HINT}, or \`token_endpoint_auth_method: private_key_jwt\` with \`jwks\` or \`jwks_uri\`, or \`tls_client_auth\``,
    )
  }
  if (secretHash !== undefined) {
    const demo = demoSecretOf(secretHash)
    if (demo !== undefined) {
      r.warn(
        c.get('secret_hash'),
        c.pathOf('secret_hash'),
        `this is the public DEMO secret \`${demo}\` from the example config; replace it: printf '%s' NEW_SECRET | bearward hash-secret`,
      )
    }
  }

  let tokenEndpointAuthMethod: TokenEndpointAuthMethod = type === 'public' ? 'none' : 'client_secret_basic'
  if (method !== undefined) {
    const methodPath = c.pathOf('token_endpoint_auth_method')
    if (type === 'public' && method !== 'none') {
      r.problem(c.get('token_endpoint_auth_method'), methodPath, `a public client cannot authenticate with \`${method}\`; public clients use \`none\``)
    } else if (type === 'confidential' && method === 'none') {
      r.problem(
        c.get('token_endpoint_auth_method'),
        methodPath,
        'a confidential client authenticates with its secret, its key or its certificate: use `client_secret_basic`, `client_secret_post`, `private_key_jwt`, `tls_client_auth` or `self_signed_tls_client_auth`',
      )
    } else {
      tokenEndpointAuthMethod = method
    }
  }

  const grantTypesRead = c.maybe(
    'grant_types',
    r.list(r.oneOf<GrantType>(GRANT_TYPES, { aliases: GRANT_ALIASES, refused: REFUSED_GRANTS, what: 'a supported grant type' }), { nonEmpty: true }),
  )
  // A refused list counts as empty here, so it draws no follow-on problems (missing redirect URIs, ...).
  const grantTypes = dedupe(grantTypesRead ?? (c.has('grant_types') ? [] : (['authorization_code', 'refresh_token'] as GrantType[])))
  if (type === 'public' && grantTypes.includes('client_credentials')) {
    r.problem(
      c.get('grant_types') ?? c.node,
      c.pathOf('grant_types'),
      'a public client cannot use `client_credentials`: that grant needs client authentication (RFC 6749 4.4)',
    )
  }

  const needsRedirect = grantTypes.includes('authorization_code')
  const redirectNeeded = 'a client with the `authorization_code` grant needs at least one redirect URI'
  const redirectUris = dedupe(
    c.opt('redirect_uris', r.list(r.str({ check: redirectUriProblem }), { nonEmpty: needsRedirect, emptyMessage: redirectNeeded }), []),
  )
  if (needsRedirect && !c.has('redirect_uris')) r.problem(c.node, c.pathOf('redirect_uris'), redirectNeeded)

  const scopes = c.opt('scopes', r.located(r.str()), [])
  for (const scope of scopes) {
    if (knownScopes.has(scope.value)) continue
    const guess = suggest(scope.value, [...knownScopes])
    const didYouMean = guess === undefined ? '' : `did you mean \`${guess}\`? `
    r.problem(scope.node, scope.path, `unknown scope \`${scope.value}\`; ${didYouMean}declare it under \`authorization_server.scopes\``)
  }

  const allowedOrigins = dedupe(c.opt('allowed_origins', r.list(r.str({ check: checkOrigin })), []))
  const introspect = c.opt('introspect', r.bool(), false)
  const allowPlainPkce = c.opt('allow_plain_pkce', r.bool(), false)
  const skipConsent = c.opt('skip_consent', r.bool(), false)
  const authorizationDetailsTypes = dedupe(c.opt('authorization_details_types', r.list(r.str()), []))
  const requireMfa = c.opt('require_mfa', r.bool(), false)

  const requirePkce = c.opt('require_pkce', r.bool(), true)
  if (type === 'public' && !requirePkce) {
    r.problem(c.get('require_pkce'), c.pathOf('require_pkce'), 'public clients must use PKCE (RFC 9700 2.1.1); remove `require_pkce: false`')
  }
  const rotateRefreshTokens = c.opt('rotate_refresh_tokens', r.bool(), true)
  if (type === 'public' && !rotateRefreshTokens) {
    r.problem(
      c.get('rotate_refresh_tokens'),
      c.pathOf('rotate_refresh_tokens'),
      "a public client's refresh tokens must rotate (RFC 9700 4.14.2); remove `rotate_refresh_tokens: false`",
    )
  }

  const dpopBoundAccessTokens = c.opt('dpop_bound_access_tokens', r.bool(), false)
  const requirePushedAuthorizationRequests = c.opt('require_pushed_authorization_requests', r.bool(), false)
  const requireSignedRequestObject = c.opt('require_signed_request_object', r.bool(), false)
  // A request object is verified with the keys private_key_jwt uses: a client without them could never send one.
  if (requireSignedRequestObject && !(usesKeys && (c.has('jwks') || c.has('jwks_uri')))) {
    r.problem(
      c.get('require_signed_request_object'),
      c.pathOf('require_signed_request_object'),
      "request objects are verified with the client's own keys: `require_signed_request_object` needs `token_endpoint_auth_method: private_key_jwt` with `jwks` or `jwks_uri`",
    )
  }
  if ((requirePushedAuthorizationRequests || requireSignedRequestObject) && !grantTypes.includes('authorization_code')) {
    const key = requirePushedAuthorizationRequests ? 'require_pushed_authorization_requests' : 'require_signed_request_object'
    r.problem(c.get(key), c.pathOf(key), `\`${key}\` is about authorization requests: the client needs the \`authorization_code\` grant`)
  }
  const backchannelLogoutUri = c.maybe('backchannel_logout_uri', r.str({ check: checkBackchannelLogoutUri }))
  const backchannelLogoutSessionRequired = c.opt('backchannel_logout_session_required', r.bool(), false)
  if (backchannelLogoutSessionRequired && backchannelLogoutUri === undefined) {
    r.problem(
      c.get('backchannel_logout_session_required'),
      c.pathOf('backchannel_logout_session_required'),
      '`backchannel_logout_session_required` is about logout tokens: set `backchannel_logout_uri` too, or remove it',
    )
  }
  const ciba = readCibaDelivery(r, c, type, grantTypes)
  const tlsClientCertificateBoundAccessTokens = c.opt('tls_client_certificate_bound_access_tokens', r.bool(), false)
  if (dpopBoundAccessTokens && tlsClientCertificateBoundAccessTokens) {
    // One token, one sender constraint: a gateway checking one of two bindings would let the other go unchecked.
    r.problem(
      c.get('tls_client_certificate_bound_access_tokens'),
      c.pathOf('tls_client_certificate_bound_access_tokens'),
      'a client binds its tokens to a DPoP key or to its certificate, not both: keep one of `dpop_bound_access_tokens` and `tls_client_certificate_bound_access_tokens`',
    )
  }
  const tokenExchange = readTokenExchange(r, c, type, grantTypes)
  const profile = readClientProfile(r, c, serverProfile)
  if (profile === 'fapi2') {
    checkFapi2Client(
      r,
      c,
      {
        type,
        method: tokenEndpointAuthMethod,
        dpopBound: dpopBoundAccessTokens,
        certificateBound: tlsClientCertificateBoundAccessTokens,
        requirePkce,
        allowPlainPkce,
        requirePushedAuthorizationRequests,
        workload: clientId !== undefined && workloadClients.has(clientId),
      },
      c.has('profile') ? 'profile: fapi2' : 'authorization_server.profile: fapi2',
    )
  }
  // FAPI 2.0 5.3.2.2: every authorization request of a FAPI client is pushed.
  const mustPush = requirePushedAuthorizationRequests || (profile === 'fapi2' && grantTypes.includes('authorization_code'))

  const rateLimits = readClientRateLimits(r, c)
  if (clientId === undefined || type === undefined) return { clientId, client: undefined }
  const client: ClientConfig = {
    clientId,
    name,
    metadata,
    type,
    secretHash: type === 'confidential' ? (secretHash ?? null) : null,
    tokenEndpointAuthMethod,
    ...keys,
    ...(tokenExchange === undefined ? {} : { tokenExchange }),
    ...(authorizationDetailsTypes.length === 0 ? {} : { authorizationDetailsTypes }),
    redirectUris,
    grantTypes,
    scopes: dedupe(scopes.map((s) => s.value)),
    allowedOrigins,
    introspect,
    requirePkce: type === 'public' ? true : requirePkce,
    allowPlainPkce,
    skipConsent,
    ...(requireMfa ? { requireMfa } : {}),
    ...(mustPush ? { requirePushedAuthorizationRequests: true } : {}),
    ...(requireSignedRequestObject ? { requireSignedRequestObject } : {}),
    rotateRefreshTokens: type === 'public' ? true : rotateRefreshTokens,
    dpopBoundAccessTokens,
    ...(tlsClientAuth === undefined ? {} : { tlsClientAuth }),
    tlsClientCertificateBoundAccessTokens,
    ...(profile === undefined ? {} : { profile }),
    ...(rateLimits === undefined ? {} : { rateLimits }),
    ...(backchannelLogoutUri === undefined ? {} : { backchannelLogout: { uri: backchannelLogoutUri, sessionRequired: backchannelLogoutSessionRequired } }),
    ...(ciba === undefined ? {} : { ciba }),
  }
  return { clientId, client }
}

/**
 * OpenID CIBA Core 1.0 4: a CIBA client's delivery mode. The grant needs client authentication (a
 * public client could be anyone asking a person to approve); `ping` needs the notification endpoint,
 * checked as `backchannel_logout_uri` is (bearward POSTs to both).
 */
function readCibaDelivery(r: Reader, c: MapView, type: ClientType | undefined, grantTypes: readonly GrantType[]): CibaClientConfig | undefined {
  const mode = c.opt('backchannel_token_delivery_mode', r.oneOf<'poll' | 'ping'>(['poll', 'ping'], { what: 'a CIBA token delivery mode' }), 'poll')
  const endpoint = c.maybe('backchannel_client_notification_endpoint', r.str({ check: checkBackchannelLogoutUri }))
  if (!grantTypes.includes(CIBA_GRANT)) {
    for (const key of ['backchannel_token_delivery_mode', 'backchannel_client_notification_endpoint']) {
      if (c.has(key)) r.problem(c.get(key), c.pathOf(key), `\`${key}\` is about backchannel authentication: add \`ciba\` to \`grant_types\`, or remove it`)
    }
    return undefined
  }
  if (type === 'public') {
    r.problem(
      c.get('grant_types') ?? c.node,
      c.pathOf('grant_types'),
      'a public client cannot use `ciba`: backchannel authentication needs client authentication (OpenID CIBA Core 1.0 7.1)',
    )
  }
  if (mode === 'poll') {
    if (endpoint !== undefined) {
      r.problem(
        c.get('backchannel_client_notification_endpoint'),
        c.pathOf('backchannel_client_notification_endpoint'),
        'a notification endpoint is for `backchannel_token_delivery_mode: ping`: set that mode, or remove the endpoint',
      )
    }
    return { deliveryMode: 'poll' }
  }
  if (endpoint === undefined) {
    if (!c.has('backchannel_client_notification_endpoint'))
      r.problem(
        c.get('backchannel_token_delivery_mode'),
        c.pathOf('backchannel_token_delivery_mode'),
        'ping mode needs `backchannel_client_notification_endpoint`',
      )
    return undefined
  }
  return { deliveryMode: 'ping', notificationEndpoint: endpoint }
}

/**
 * `jwks` or `jwks_uri` of a `private_key_jwt` client: exactly one, and only
 * for such a client. An inline set must hold at least one usable public
 * signature key (a private or symmetric key there is a mistake to report,
 * never a key to use).
 */
function readClientKeys(
  r: Reader,
  c: MapView,
  usesKeys: boolean,
  workload: boolean,
  method: TokenEndpointAuthMethod | undefined,
): Pick<ClientConfig, 'jwks' | 'jwksUri'> {
  if (!usesKeys) {
    for (const key of ['jwks', 'jwks_uri']) {
      if (c.has(key))
        r.problem(
          c.get(key),
          c.pathOf(key),
          `\`${key}\` is for \`token_endpoint_auth_method: private_key_jwt\` clients (and inline \`jwks\` for \`self_signed_tls_client_auth\` ones)`,
        )
    }
    return {}
  }
  if (method === 'self_signed_tls_client_auth' && !c.has('jwks')) {
    // The certificate's key is compared with every key of the set: a fetched set is not enumerated (yet).
    r.problem(
      c.get('jwks_uri') ?? c.node,
      c.pathOf('jwks'),
      'a `self_signed_tls_client_auth` client lists the public key of its certificate inline: `jwks: { keys: [...] }` (`jwks_uri` is not supported for it)',
    )
    return {}
  }
  if (workload && !c.has('jwks') && !c.has('jwks_uri')) return {}
  if (c.has('jwks') === c.has('jwks_uri')) {
    r.problem(
      c.node,
      c.pathOf('jwks'),
      'a `private_key_jwt` client needs its public keys: `jwks: { keys: [...] }` or `jwks_uri: https://...`, exactly one of the two',
    )
    return {}
  }
  if (c.has('jwks_uri')) {
    const jwksUri = c.maybe('jwks_uri', r.str({ check: checkJwksUri }))
    return jwksUri === undefined ? {} : { jwksUri }
  }
  const node = c.get('jwks')
  const doc = node === undefined ? undefined : r.plainMap(node, c.pathOf('jwks'))
  if (doc === undefined) return {}
  const problem = jwkSetProblem(doc)
  if (problem !== undefined) {
    r.problem(node, c.pathOf('jwks'), problem)
    return {}
  }
  return { jwks: doc as unknown as JwkSetDocument }
}

/**
 * `token_exchange: { audiences, refresh_tokens }`: only with the token-exchange grant, and that grant
 * only with it; refresh tokens only for a client that may redeem them.
 */
function readTokenExchange(
  r: Reader,
  c: MapView,
  type: ClientType | undefined,
  grantTypes: readonly GrantType[],
): { audiences: string[]; refreshTokens: boolean } | undefined {
  const hasGrant = grantTypes.includes(TOKEN_EXCHANGE_GRANT)
  const node = c.get('token_exchange')
  if (node === undefined) {
    if (hasGrant)
      r.problem(
        c.get('grant_types') ?? c.node,
        c.pathOf('token_exchange'),
        'the `token-exchange` grant needs `token_exchange: { audiences: [...] }`: the audiences this client may exchange tokens for',
      )
    return undefined
  }
  if (!hasGrant) r.problem(node, c.pathOf('token_exchange'), '`token_exchange` needs `token-exchange` in `grant_types`')
  if (type === 'public') r.problem(node, c.pathOf('token_exchange'), 'a public client cannot exchange tokens: the exchange needs client authentication')
  const m = r.map(node, c.pathOf('token_exchange'), TOKEN_EXCHANGE_KEYS)
  const audiences = m?.req('audiences', r.list(r.str(), { nonEmpty: true }))
  const refreshTokens = m?.opt('refresh_tokens', r.bool(), false) ?? false
  if (m !== undefined && refreshTokens && !grantTypes.includes('refresh_token')) {
    r.problem(
      m.get('refresh_tokens'),
      m.pathOf('refresh_tokens'),
      '`refresh_tokens: true` needs `refresh_token` in `grant_types`: the client redeems them with it',
    )
  }
  return audiences === undefined ? undefined : { audiences: dedupe(audiences), refreshTokens }
}

/** Each client a workload issuer vouches for is a configured confidential `private_key_jwt` client. */
export function checkWorkloadSubjects(r: Reader, issuers: readonly AssertionIssuerConfig[], clients: readonly ClientConfig[], node: Node | undefined): void {
  const byId = new Map(clients.map((c) => [c.clientId, c]))
  for (const issuer of issuers) {
    for (const [sub, clientId] of Object.entries(issuer.subjects)) {
      const client = byId.get(clientId)
      if (client !== undefined && client.tokenEndpointAuthMethod === 'private_key_jwt') continue
      const why = client === undefined ? 'no client has this id' : 'it is not a `token_endpoint_auth_method: private_key_jwt` client'
      r.problem(node, `${issuer.position}.subjects["${sub}"]`, `\`${clientId}\` cannot be authenticated by a workload token: ${why}`)
    }
  }
}

const TLS_CLIENT_AUTH_KEYS = [
  ['tls_client_auth_subject_dn', 'subject_dn'],
  ['tls_client_auth_san_dns', 'san_dns'],
  ['tls_client_auth_san_uri', 'san_uri'],
  ['tls_client_auth_san_ip', 'san_ip'],
  ['tls_client_auth_san_email', 'san_email'],
] as const

/**
 * RFC 8705 2.1.2: a `tls_client_auth` client names exactly one of the
 * subject DN or one SAN its certificate must carry; no other client names any.
 */
function readTlsClientAuthName(r: Reader, c: MapView, usesPki: boolean): TlsClientAuthName | undefined {
  const given = TLS_CLIENT_AUTH_KEYS.filter(([key]) => c.has(key))
  if (!usesPki) {
    for (const [key] of given) r.problem(c.get(key), c.pathOf(key), `\`${key}\` is for \`token_endpoint_auth_method: tls_client_auth\` clients`)
    return undefined
  }
  if (given.length !== 1) {
    r.problem(
      c.node,
      c.pathOf('tls_client_auth_subject_dn'),
      'a `tls_client_auth` client names the certificate it authenticates with by exactly one of `tls_client_auth_subject_dn`, `tls_client_auth_san_dns`, `tls_client_auth_san_uri`, `tls_client_auth_san_ip`, `tls_client_auth_san_email`',
    )
    return undefined
  }
  const [key, kind] = given[0] as (typeof TLS_CLIENT_AUTH_KEYS)[number]
  const value = c.maybe(key, r.str())
  if (value === undefined) return undefined
  const node = c.get(key)
  if (kind === 'subject_dn') {
    try {
      return { kind, value, canonical: canonicalDistinguishedName(value) }
    } catch (err) {
      r.problem(node, c.pathOf(key), `not an RFC 4514 distinguished name: ${(err as Error).message}`)
      return undefined
    }
  }
  if (kind === 'san_ip') {
    const text = canonicalIp(value)
    if (text === null) r.problem(node, c.pathOf(key), `\`${value}\` is not an IPv4 or IPv6 address`)
    return text === null ? undefined : { kind, value: text }
  }
  if (kind === 'san_dns') return { kind, value: value.toLowerCase() }
  return { kind, value }
}

/** An IP address in the text form certificate SANs are read into (http/der.ts). */
function canonicalIp(value: string): string | null {
  if (isIP(value) === 4) return value.split('.').map(Number).join('.')
  if (isIP(value) !== 6) return null
  const words = parseIPv6(value)
  if (words === null) return null
  const bytes = Buffer.alloc(16)
  for (let i = 0; i < 4; i++) bytes.writeUInt32BE(words[i] as number, i * 4)
  return ipText(bytes)
}

/** https, or http on a loopback host (a key server on the same machine); no credentials or fragment. */
function checkJwksUri(value: string): string | undefined {
  const url = parseAbsoluteUrl(value)
  if (url === undefined || (url.protocol !== 'https:' && url.protocol !== 'http:')) return 'expected the https URL of a JWK Set'
  if (url.protocol === 'http:' && !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) return 'a jwks_uri is https (http only on a loopback host)'
  if (url.username !== '' || url.password !== '' || value.includes('#')) return 'a jwks_uri has no credentials or fragment'
  return undefined
}

function dedupe<T>(values: T[]): T[] {
  return [...new Set(values)]
}
