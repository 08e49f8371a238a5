/**
 * `authorization_server.identity_providers[]`: upstream OpenID Connect
 * providers people sign in with (docs/identity-providers.md). Discovery
 * happens at run time (src/as/identity-providers/providers.ts); here only the shape.
 */
import type { Node } from 'yaml'
import type { IdentityProviderAllowed, IdentityProviderConfig, UserConfig } from '../validated-config.js'
import type { Reader } from '../reader.js'
import { SCOPE_TOKEN } from '../values.js'
import { UniqueSet } from '../unique.js'
import { enumAt, keysAt } from '../contract.js'
import { OWN_ACR_VALUES, type OwnAcr } from '../../tokens/acr.js'

export const IDENTITY_PROVIDER_KEYS = keysAt('#/$defs/identityProvider')
export const ALLOWED_KEYS = keysAt('#/$defs/identityProvider/properties/allowed')

/** The provider id is a path segment and the prefix of the person's `sub`, so it is kept plain. */
const PROVIDER_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,62}$/
/** `on_logout`: what a provider's logout token ends. */
const ON_LOGOUT = enumAt<IdentityProviderConfig['onLogout']>('#/$defs/identityProvider/properties/on_logout', ['sessions', 'grants'])

export const DEFAULT_PROVIDER_SCOPES: readonly string[] = ['openid', 'profile', 'email']

/** Without a `claims` mapping: the usual profile and email claims, under their own names. */
export const DEFAULT_CLAIM_MAPPING: Readonly<Record<string, string>> = {
  name: 'name',
  preferred_username: 'preferred_username',
  email: 'email',
  email_verified: 'email_verified',
}

/** Claims bearward sets itself in the tokens it issues; a mapping may not write them. */
const RESERVED_CLAIMS: ReadonlySet<string> = new Set(enumAt('#/$defs/identityProvider/properties/claims/propertyNames/not'))

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '127.0.0.1' || hostname === '[::1]'
}

/** An issuer identifier (OIDC Discovery 3): https, no query or fragment; http only for loopback development providers. */
export function checkProviderIssuer(value: string): string | undefined {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return 'expected an issuer URL such as https://sso.example.com'
  }
  if (url.search !== '' || url.hash !== '' || value.includes('?') || value.includes('#'))
    return 'an issuer has no query or fragment (OpenID Connect Discovery 3)'
  if (url.protocol === 'https:') return undefined
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) return undefined
  if (url.protocol === 'http:') return 'use https (http is accepted only for a provider on localhost, 127.0.0.1 or [::1])'
  return 'expected an https URL'
}

export function readIdentityProviders(r: Reader, node: Node, path: string): IdentityProviderConfig[] {
  const providers: IdentityProviderConfig[] = []
  const ids = new UniqueSet(r, 'identity provider id')
  for (const item of r.items(node, path) ?? []) {
    const p = r.map(item.node, item.path, IDENTITY_PROVIDER_KEYS)
    if (p === undefined) continue
    const id = p.req(
      'id',
      r.str({
        check: (v) =>
          PROVIDER_ID.test(v)
            ? undefined
            : "use letters, digits, `_` and `-` (at most 63), starting with a letter or digit: it is part of a URL path and of people's `sub`",
      }),
    )
    const name = p.req('name', r.str(), ' (shown on the button: "Continue with <name>")')
    const issuer = p.req('issuer', r.str({ check: checkProviderIssuer }))
    const clientId = p.req('client_id', r.str(), ' (the client id bearward has at this provider)')
    const clientSecret = p.opt<string | null>('client_secret', r.str(), null)
    const scopes = p.opt('scopes', r.list(r.str({ check: (v) => (SCOPE_TOKEN.test(v) ? undefined : `\`${v}\` is not a valid scope name (RFC 6749 3.3)`) })), [
      ...DEFAULT_PROVIDER_SCOPES,
    ])
    if (p.has('scopes') && !scopes.includes('openid')) {
      r.problem(p.get('scopes'), p.pathOf('scopes'), 'must include `openid`: bearward signs people in with OpenID Connect')
    }
    const allowed = p.has('allowed') && !p.isNull('allowed') ? readAllowed(r, p.get('allowed'), p.pathOf('allowed')) : null
    const claims = p.has('claims') ? readClaimMapping(r, p.get('claims'), p.pathOf('claims')) : { ...DEFAULT_CLAIM_MAPPING }
    const acrValues = p.has('acr_values') ? readAcrValues(r, p.get('acr_values'), p.pathOf('acr_values')) : {}
    const backchannelLogout = p.opt('backchannel_logout', r.bool(), false)
    const onLogout = p.opt('on_logout', r.oneOf(ON_LOGOUT, { what: 'what a logout token ends' }), 'sessions')
    if (p.has('on_logout') && !backchannelLogout) {
      r.problem(
        p.get('on_logout'),
        p.pathOf('on_logout'),
        "`on_logout` says what the provider's logout tokens end: set `backchannel_logout: true` too, or remove it",
      )
    }
    if (id === undefined) continue
    ids.add(id, p.get('id'), p.pathOf('id'))
    if (name === undefined || issuer === undefined || clientId === undefined || claims === undefined || allowed === undefined || acrValues === undefined)
      continue
    providers.push({ id, name, issuer, clientId, clientSecret, scopes, allowed, claims, acrValues, backchannelLogout, onLogout, position: item.path })
  }
  return providers
}

function readAllowed(r: Reader, node: Node | undefined, path: string): IdentityProviderAllowed | undefined {
  const a = r.map(node, path, ALLOWED_KEYS)
  if (a === undefined) return undefined
  const emailDomains = a.maybe('email_domains', r.list(r.str({ check: checkDomain }), { nonEmpty: true }))
  const claimName = a.maybe('claim', r.str())
  const values = a.maybe('values', r.list(r.str(), { nonEmpty: true }))
  if (a.has('claim') !== a.has('values')) {
    r.problem(a.node, path, '`claim` and `values` go together: `{ claim: groups, values: [admins] }` lets in people whose `groups` claim holds `admins`')
    return undefined
  }
  if (!a.has('email_domains') && !a.has('claim')) {
    r.problem(a.node, path, 'name who may sign in: `email_domains: [example.com]`, or `claim: groups` with `values: [...]`; omit `allowed` to let everyone in')
    return undefined
  }
  if ((a.has('email_domains') && emailDomains === undefined) || (a.has('claim') && (claimName === undefined || values === undefined))) return undefined
  return {
    emailDomains: emailDomains === undefined ? null : emailDomains.map((d) => d.toLowerCase()),
    claim: claimName === undefined || values === undefined ? null : { name: claimName, values },
  }
}

function checkDomain(value: string): string | undefined {
  if (value.includes('@')) return 'a domain without `@`, e.g. `example.com`'
  if (!/^[A-Za-z0-9.-]+$/.test(value) || value.startsWith('.') || value.endsWith('.')) return 'expected a domain such as `example.com`'
  return undefined
}

function readClaimMapping(r: Reader, node: Node | undefined, path: string): Record<string, string> | undefined {
  if (node === undefined) return {}
  const entries = r.entries(node, path)
  if (entries === undefined) return undefined
  const mapping: Record<string, string> = {}
  let ok = true
  for (const e of entries) {
    if (RESERVED_CLAIMS.has(e.key)) {
      r.problem(e.keyNode, e.path, `\`${e.key}\` is set by bearward itself; map the upstream claim to another name`)
      ok = false
      continue
    }
    const upstream = r.str()(e.value, e.path)
    if (upstream === undefined) {
      ok = false
      continue
    }
    mapping[e.key] = upstream
  }
  return ok ? mapping : undefined
}

/** An acr value as it travels (RFC 9470 3: space-separated in a quoted `acr_values`), at most as long as one kept from an id_token. */
const ACR_VALUE = /^[\x21\x23-\x5b\x5d-\x7e]{1,200}$/

/**
 * `acr_values: { <the provider's value>: pwd | mfa | phr }`: which of the
 * provider's sign-ins count as which of ours. Nothing is assumed: a value
 * the map does not name never passes for one of ours (docs/step-up.md).
 */
function readAcrValues(r: Reader, node: Node | undefined, path: string): Record<string, OwnAcr> | undefined {
  if (node === undefined) return {}
  const entries = r.entries(node, path)
  if (entries === undefined) return undefined
  // No prototype: a provider's value such as `__proto__` is a key like any other.
  const mapping = Object.create(null) as Record<string, OwnAcr>
  let ok = true
  for (const e of entries) {
    if (!ACR_VALUE.test(e.key)) {
      r.problem(e.keyNode, e.path, `\`${e.key}\` is not an acr value (printable ASCII without spaces, \`"\` or \`\\\`, at most 200 characters)`)
      ok = false
      continue
    }
    const ours = r.str({
      check: (v) => ((OWN_ACR_VALUES as readonly string[]).includes(v) ? undefined : `map to one of bearward's acr values: ${OWN_ACR_VALUES.join(', ')}`),
    })(e.value, e.path)
    if (ours === undefined) {
      ok = false
      continue
    }
    mapping[e.key] = ours as OwnAcr
  }
  return ok ? mapping : undefined
}

/**
 * An upstream person's `sub` is `<provider id>:<upstream sub>`; a local user
 * whose `sub` or username has that form could be taken for one, so refuse it.
 */
export function checkLocalUsersAgainstProviders(
  r: Reader,
  users: readonly UserConfig[],
  providers: readonly IdentityProviderConfig[],
  usersNode: Node | undefined,
  usersPath: string,
): void {
  for (const [index, user] of users.entries()) {
    for (const p of providers) {
      const prefix = `${p.id}:`
      if (user.sub.startsWith(prefix) || user.username.startsWith(prefix)) {
        r.problem(
          usersNode,
          `${usersPath}[${index}]`,
          `a local user's username or sub may not start with \`${prefix}\`: that is the form of people who sign in with identity provider \`${p.id}\``,
        )
      }
    }
  }
}
