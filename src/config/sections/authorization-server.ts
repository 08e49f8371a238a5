/**
 * `authorization_server`: the built-in issuer (`self`). Durations become whole
 * seconds; the built-in OIDC scopes are always known.
 */
import { SSF_STREAM_SCOPE } from './ssf-scope.js'
import { isSeq, type Node } from 'yaml'
import type { AuthorizationServerConfig, ClientConfig, KeySource } from '../validated-config.js'
import type { Reader } from '../reader.js'
import { checkHttpUrl, parseAbsoluteUrl, SCOPE_TOKEN, stripTrailingSlash } from '../values.js'
import { readAssertionIssuers } from './assertion-issuers.js'
import { checkWorkloadSubjects, readClients } from './clients.js'
import { readMetadataDocuments } from './metadata-documents.js'
import { readRegistration } from './registration.js'
import { readUsers } from './users.js'
import { checkLocalUsersAgainstProviders, readIdentityProviders } from './identity-providers.js'
import { enumAt, keysAt } from '../contract.js'
import { readWebAuthn } from './webauthn.js'
import { readAuthorizationDetailsTypes } from './authorization-details-types.js'
import { checkFapi2Server, SECURITY_PROFILES } from './security-profile.js'

/**
 * Claims bearward sets in every access token (RFC 9068 2.2, RFC 9449 6.1,
 * and its own grant_id), and id_token-only ones that mean something else in
 * an access token: a person's claim of that name would forge or blur them.
 */
const RESERVED_ACCESS_TOKEN_CLAIMS: ReadonlySet<string> = new Set([
  'iss',
  'sub',
  'aud',
  'exp',
  'nbf',
  'iat',
  'jti',
  'client_id',
  'scope',
  'cnf',
  'grant_id',
  'auth_time',
  'acr',
  'amr',
  'act',
  'may_act',
  'azp',
  'nonce',
  'at_hash',
  'c_hash',
  'typ',
  'active',
  'token_type',
  'username',
])

export const AUTHORIZATION_SERVER_KEYS = keysAt('#/$defs/authorizationServer')
const MFA_KEYS = keysAt('#/$defs/authorizationServer/properties/mfa')
const MFA_METHODS = enumAt<'passkey' | 'totp'>('#/$defs/authorizationServer/properties/mfa/properties/methods/items')

/** A key for authenticator-app secrets shorter than this is not 256 bits of anything. */
const MIN_TOTP_KEY_LENGTH = 32

/** `mfa` (docs/people.md): absent unless configured, so the default (not required, both methods, derived keys) needs no key. */
function readMfa(r: Reader, node: Node | undefined, path: string): Pick<AuthorizationServerConfig, 'mfa'> {
  if (node === undefined) return {}
  const m = r.map(node, path, MFA_KEYS)
  const both: Array<'passkey' | 'totp'> = ['passkey', 'totp']
  const methods = m?.opt('methods', r.list(r.oneOf(MFA_METHODS, { what: 'a second factor' }), { nonEmpty: true }), both) ?? both
  const totpKey = r.str({
    check: (v) =>
      v.length >= MIN_TOTP_KEY_LENGTH
        ? undefined
        : `a key for authenticator-app secrets needs at least ${MIN_TOTP_KEY_LENGTH} characters; create one with \`openssl rand -base64 32\``,
  })
  const current = m?.maybe('totp_encryption_key', totpKey)
  const previous = m?.opt('totp_previous_keys', r.list(totpKey), []) ?? []
  if (current === undefined && previous.length > 0) {
    r.problem(
      m?.get('totp_previous_keys') ?? node,
      `${path}.totp_previous_keys`,
      'previous keys only open what they sealed: give the key that seals now as `totp_encryption_key`',
    )
  }
  const keys = current === undefined ? {} : { totpEncryptionKeys: [current, ...previous.filter((k) => k !== current)] }
  return { mfa: { required: m?.opt('required', r.bool(), false) ?? false, methods: [...new Set(methods)], ...keys } }
}

/** The keys of each small mapping under authorization_server. */
const SUB_KEYS = {
  access_token: keysAt('#/$defs/authorizationServer/properties/access_token'),
  refresh_token: keysAt('#/$defs/authorizationServer/properties/refresh_token'),
  id_token: keysAt('#/$defs/authorizationServer/properties/id_token'),
  session: keysAt('#/$defs/authorizationServer/properties/session'),
  consent: keysAt('#/$defs/authorizationServer/properties/consent'),
  rate_limit: keysAt('#/$defs/authorizationServer/properties/rate_limit'),
  device: keysAt('#/$defs/authorizationServer/properties/device'),
  ciba: keysAt('#/$defs/authorizationServer/properties/ciba'),
  par: keysAt('#/$defs/authorizationServer/properties/par'),
}
const KEY_SOURCE_KEYS = keysAt('#/$defs/authorizationServer/properties/keys/items')
const TOKEN_FORMATS = enumAt<AuthorizationServerConfig['accessToken']['format']>('#/$defs/authorizationServer/properties/access_token/properties/format')

/** OIDC Core 5.4 scopes plus offline_access (OIDC Core 11); their texts show on the consent page. */
export const BUILT_IN_SCOPES: Readonly<Record<string, string>> = {
  openid: 'Sign you in with your account',
  profile: 'Read your basic profile (name)',
  email: 'Read your email address',
  offline_access: 'Keep access while you are not using the app',
  // Shared Signals (docs/signals.md): a receiver's client-credentials token manages its stream; advertised only while the transmitter is on.
  [SSF_STREAM_SCOPE]: "Manage this application's stream of security events",
}

/** Key types that can sign JWTs with the asymmetric algorithms we allow. */
const SIGNING_KTY: readonly string[] = enumAt('#/$defs/authorizationServer/properties/keys/items/properties/jwk/properties/kty')

/** RFC 6749 4.1.2 recommends at most 10 minutes for an authorization code. */
const MAX_CODE_TTL_SEC = 600

/** A pushed request waits for one redirect: 10 minutes is already generous (RFC 9126 2.2: 5 to 600 s in its examples). */
const MAX_REQUEST_URI_TTL_SEC = 600

export function readAuthorizationServer(r: Reader, node: Node, path: string, publicUrl: string): AuthorizationServerConfig | undefined {
  const as = r.map(node, path, AUTHORIZATION_SERVER_KEYS)
  if (as === undefined) return undefined

  const keys = as.opt('keys', (n, p) => readKeys(r, n, p), [])
  // Only when none is listed: a listed key that is refused (file not found) is already an
  // error, and saying an ephemeral key will be generated would be untrue (the load fails).
  const keysNode = r.resolve(as.get('keys'))
  if (keys.length === 0 && (keysNode === undefined || (isSeq(keysNode) && keysNode.items.length === 0))) {
    r.warn(
      as.get('keys') ?? as.node,
      as.pathOf('keys'),
      'no signing keys: an ephemeral key is generated at start, so tokens stop validating after a restart and differ between instances; create one with `bearward keys generate` and list it under `keys`',
    )
  }

  const at = r.map(as.get('access_token'), as.pathOf('access_token'), SUB_KEYS.access_token)
  const rt = r.map(as.get('refresh_token'), as.pathOf('refresh_token'), SUB_KEYS.refresh_token)
  const it = r.map(as.get('id_token'), as.pathOf('id_token'), SUB_KEYS.id_token)
  const session = r.map(as.get('session'), as.pathOf('session'), SUB_KEYS.session)
  const consent = r.map(as.get('consent'), as.pathOf('consent'), SUB_KEYS.consent)
  const rate = r.map(as.get('rate_limit'), as.pathOf('rate_limit'), SUB_KEYS.rate_limit)
  const device = r.map(as.get('device'), as.pathOf('device'), SUB_KEYS.device)
  const ciba = r.map(as.get('ciba'), as.pathOf('ciba'), SUB_KEYS.ciba)
  const par = r.map(as.get('par'), as.pathOf('par'), SUB_KEYS.par)

  const scopes: Record<string, string> = { ...BUILT_IN_SCOPES }
  const knownScopes = new Set(Object.keys(scopes))
  const scopesNode = as.get('scopes')
  for (const e of scopesNode === undefined ? [] : (r.entries(scopesNode, as.pathOf('scopes')) ?? [])) {
    if (!SCOPE_TOKEN.test(e.key)) {
      r.problem(e.keyNode, e.path, `\`${e.key}\` is not a valid scope name: no spaces, \`"\` or \`\\\` (RFC 6749 3.3)`)
      continue
    }
    // Known even when its description is refused, so clients naming it get no second problem.
    knownScopes.add(e.key)
    const description = r.str()(e.value, e.path)
    if (description !== undefined) scopes[e.key] = description
  }

  const cibaTtlSec = ciba?.opt('ttl', r.seconds({ min: 1 }), 300) ?? 300
  const cibaIntervalSec = ciba?.opt('interval', r.seconds({ min: 1 }), 5) ?? 5
  if (ciba !== undefined && cibaIntervalSec >= cibaTtlSec) {
    r.problem(
      ciba.get('interval') ?? ciba.node,
      ciba.pathOf('interval'),
      `the polling interval (${cibaIntervalSec}s) must be shorter than the backchannel request ttl (${cibaTtlSec}s)`,
    )
  }
  const deviceTtlSec = device?.opt('ttl', r.seconds({ min: 1 }), 600) ?? 600
  const intervalSec = device?.opt('interval', r.seconds({ min: 1 }), 5) ?? 5
  if (device !== undefined && intervalSec >= deviceTtlSec) {
    r.problem(
      device.get('interval') ?? device.node,
      device.pathOf('interval'),
      `the polling interval (${intervalSec}s) must be shorter than the device code ttl (${deviceTtlSec}s)`,
    )
  }

  const assertionIssuers = as.opt('assertion_issuers', (n, p) => readAssertionIssuers(r, n, p, publicUrl), [])
  // A client a workload issuer vouches for authenticates with the platform's token: it needs no key or secret of its own.
  const workloadClients = new Set(assertionIssuers.flatMap((i) => Object.values(i.subjects)))
  const profile = as.maybe('profile', r.oneOf(SECURITY_PROFILES, { what: 'a security profile' })) ?? null
  const clients = as.opt('clients', (n, p) => readClients(r, n, p, knownScopes, workloadClients, profile), [])
  checkWorkloadSubjects(r, assertionIssuers, clients, as.get('assertion_issuers'))
  const authorizationDetailsTypes = readAuthorizationDetailsTypes(r, as.get('authorization_details_types'), as.pathOf('authorization_details_types'))
  checkClientDetailsTypes(r, clients, authorizationDetailsTypes, as.get('clients') ?? as.node, as.pathOf('clients'))
  const users = as.opt('users', (n, p) => readUsers(r, n, p), [])
  const identityProviders = as.opt('identity_providers', (n, p) => readIdentityProviders(r, n, p), [])
  const localLogin = as.opt('local_login', r.bool(), true)
  checkLocalUsersAgainstProviders(r, users, identityProviders, as.get('users'), as.pathOf('users'))
  if (!localLogin && identityProviders.length === 0) {
    r.problem(
      as.get('local_login'),
      as.pathOf('local_login'),
      'with `local_login: false` people can only sign in through `identity_providers`, and none is configured',
    )
  }

  const codeTtlSec = as.opt('code_ttl', r.seconds({ min: 1, max: MAX_CODE_TTL_SEC }), 60)
  const parRequired = par?.opt('required', r.bool(), false) ?? false
  const registration = readRegistration(r, as.get('registration'), as.pathOf('registration'), knownScopes)
  const clientIdMetadataDocuments = readMetadataDocuments(r, as.get('client_id_metadata_documents'), as.pathOf('client_id_metadata_documents'), knownScopes)
  if (profile === 'fapi2') {
    checkFapi2Server(r, as, {
      codeTtlSec,
      parRequired,
      parRequiredNode: par?.get('required'),
      registration: registration !== null,
      documents: clientIdMetadataDocuments !== null,
    })
  }

  return {
    keys,
    profile,
    accessToken: {
      format: at?.opt('format', r.oneOf(TOKEN_FORMATS, { what: 'an access token format' }), 'jwt') ?? 'jwt',
      ttlSec: at?.opt('ttl', r.seconds({ min: 1 }), 600) ?? 600,
      claims:
        at?.opt(
          'claims',
          r.list(
            r.str({
              check: (v) =>
                RESERVED_ACCESS_TOKEN_CLAIMS.has(v)
                  ? `\`${v}\` is a claim bearward sets itself in every access token; it cannot come from the person`
                  : undefined,
            }),
          ),
          [],
        ) ?? [],
    },
    refreshToken: { ttlSec: rt?.opt('ttl', r.seconds({ min: 1 }), 30 * 86400) ?? 30 * 86400 },
    idToken: { ttlSec: it?.opt('ttl', r.seconds({ min: 1 }), 3600) ?? 3600 },
    codeTtlSec,
    mtlsUrl: stripTrailingSlash(as.opt('mtls_url', r.str({ check: checkMtlsUrl }), '')) || null,
    scopes,
    clients,
    assertionIssuers,
    users,
    localLogin,
    identityProviders,
    webauthn: readWebAuthn(r, as.get('webauthn'), as.pathOf('webauthn'), publicUrl),
    ...readMfa(r, as.get('mfa'), as.pathOf('mfa')),
    session: {
      ttlSec: session?.opt('ttl', r.seconds({ min: 1 }), 8 * 3600) ?? 8 * 3600,
      factorChangeMaxAgeSec: session?.opt('factor_change_max_age', r.seconds({ min: 1, max: 86_400 }), 600) ?? 600,
    },
    consent: {
      remember: consent?.opt('remember', r.bool(), true) ?? true,
      ttlSec: consent?.opt('ttl', r.seconds({ min: 1 }), 30 * 86400) ?? 30 * 86400,
    },
    rateLimit: {
      loginMaxFailures: rate?.opt('login_max_failures', r.int({ min: 1 }), 5) ?? 5,
      loginAddressMaxFailures: rate?.opt('login_address_max_failures', r.int({ min: 1 }), 20) ?? 20,
      loginDelayMaxSec: rate?.opt('login_delay_max', r.seconds({ min: 1, max: 3600 }), 60) ?? 60,
      knownBrowserTtlSec: rate?.opt('known_browser_ttl', r.seconds({ min: 1 }), 90 * 86400) ?? 90 * 86400,
      clientAuthMaxFailures: rate?.opt('client_auth_max_failures', r.int({ min: 1 }), 10) ?? 10,
      clientAuthAddressMaxFailures: rate?.opt('client_auth_address_max_failures', r.int({ min: 1 }), 50) ?? 50,
      windowSec: rate?.opt('window', r.seconds({ min: 1 }), 900) ?? 900,
      passkeyOptionsPerAddress: rate?.opt('passkey_options_per_address', r.int({ min: 1 }), 100) ?? 100,
      ipv6Prefix: rate?.opt('ipv6_prefix', r.int({ min: 32, max: 128 }), 64) ?? 64,
    },
    device: { ttlSec: deviceTtlSec, intervalSec },
    ciba: { ttlSec: cibaTtlSec, intervalSec: cibaIntervalSec },
    par: {
      // FAPI 2.0 5.3.2.2: under the profile every client pushes.
      required: parRequired || profile === 'fapi2',
      // RFC 9126 2.2: short-lived; long enough for a redirect, short enough that a leaked one is soon worthless.
      requestUriTtlSec: par?.opt('request_uri_ttl', r.seconds({ min: 5, max: MAX_REQUEST_URI_TTL_SEC }), 60) ?? 60,
    },
    registration,
    clientIdMetadataDocuments,
    ...(Object.keys(authorizationDetailsTypes).length === 0 ? {} : { authorizationDetailsTypes }),
  }
}

/** RFC 9396 10: a client may be allowed only types the server declares. */
function checkClientDetailsTypes(
  r: Reader,
  clients: readonly ClientConfig[],
  declared: Readonly<Record<string, unknown>>,
  node: Node | undefined,
  path: string,
): void {
  for (const [index, client] of clients.entries()) {
    for (const type of client.authorizationDetailsTypes ?? []) {
      if (Object.hasOwn(declared, type)) continue
      r.problem(
        node,
        `${path}[${index}].authorization_details_types`,
        `client \`${client.clientId}\` names the authorization details type \`${type}\`, which is not declared under \`authorization_server.authorization_details_types\``,
      )
    }
  }
}

function readKeys(r: Reader, node: Node, path: string): KeySource[] | undefined {
  const items = r.items(node, path)
  if (items === undefined) return undefined
  const keys: KeySource[] = []
  for (const [index, item] of items.entries()) {
    const k = r.map(item.node, item.path, KEY_SOURCE_KEYS)
    if (k === undefined) continue
    if (k.has('file') === k.has('jwk')) {
      r.problem(k.node ?? item.node, item.path, 'a key is either `{ file: path/to/key.jwk }` or `{ jwk: { ... } }`, exactly one of the two')
      continue
    }
    if (k.has('file')) {
      const file = k.req('file', r.filePath())
      if (file !== undefined) keys.push({ file })
      continue
    }
    const jwkNode = k.get('jwk')
    const jwk = jwkNode === undefined ? undefined : r.plainMap(jwkNode, k.pathOf('jwk'))
    if (jwk === undefined) continue
    if (typeof jwk.kty !== 'string' || !SIGNING_KTY.includes(jwk.kty)) {
      r.problem(jwkNode, `${k.pathOf('jwk')}.kty`, 'a signing JWK needs `kty` `RSA`, `EC` or `OKP` (symmetric keys are not used)')
      continue
    }
    if (index === 0 && typeof jwk.d !== 'string') {
      r.problem(jwkNode, `${k.pathOf('jwk')}.d`, 'the first key signs tokens, so it needs its private part (`d`)')
      continue
    }
    keys.push({ jwk })
  }
  return keys
}

/** RFC 8705 5: an https base URL (a client certificate over http would prove nothing). */
function checkMtlsUrl(value: string): string | undefined {
  const reason = checkHttpUrl(value)
  if (reason !== undefined) return reason
  return parseAbsoluteUrl(value)?.protocol === 'https:' ? undefined : '`mtls_url` is where clients present certificates over TLS: use https://'
}
