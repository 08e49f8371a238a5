/**
 * `gateway`: settings shared by every route (the resource-server side,
 * RFC 6750). Route-level `realm` and `identity_headers` fall back to these.
 */
import type { Node } from 'yaml'
import type { GatewayConfig, IdentityHeaders } from '../validated-config.js'
import type { Reader } from '../reader.js'
import { UniqueSet } from '../unique.js'
import { checkIpRange, HTTP_TOKEN } from '../values.js'
import { keysAt } from '../contract.js'

export const GATEWAY_KEYS = keysAt('#/$defs/gateway')

const TOKEN_CACHE_KEYS = keysAt('#/$defs/gateway/properties/token_cache')
const INTROSPECTION_CACHE_KEYS = keysAt('#/$defs/gateway/properties/introspection_cache')

export const IDENTITY_HEADER_KEYS = keysAt('#/$defs/identityHeaders')

export const DEFAULT_IDENTITY_HEADERS: IdentityHeaders = {
  subject: 'X-Auth-Subject',
  clientId: 'X-Auth-Client-Id',
  scope: 'X-Auth-Scope',
  issuer: 'X-Auth-Issuer',
  claims: {},
}

/** RFC 8725 / SPEC: tens of seconds at most; minutes would defeat revocation. */
const MAX_CLOCK_SKEW_SEC = 60

/** Headers the gateway itself owns or that would break the proxied message. */
const RESERVED_HEADERS = new Set(['authorization', 'host', 'cookie', 'connection', 'content-length', 'transfer-encoding', 'upgrade', 'te', 'trailer'])

export const DEFAULT_REALM = 'bearward'

/** A stream outlives its token's exp by this much by default: as long as a request is accepted past exp (clock_skew's default). */
const DEFAULT_STREAM_EXPIRY_GRACE_SEC = 30

/** The realm is a quoted-string in WWW-Authenticate (RFC 9110 11.6.1). */
export function checkRealm(value: string): string | undefined {
  return /^[\x20\x21\x23-\x5b\x5d-\x7e]+$/.test(value) ? undefined : 'a realm is printable ASCII without `"` or `\\`'
}

function checkHeaderName(value: string): string | undefined {
  if (!HTTP_TOKEN.test(value)) return `\`${value}\` is not a valid header name`
  if (RESERVED_HEADERS.has(value.toLowerCase())) return `\`${value}\` cannot carry identity: the proxy manages that header`
  return undefined
}

/** Identity headers; absent keys come from `fallback` (the gateway's, for a route). */
export function readIdentityHeaders(r: Reader, node: Node | undefined, path: string, fallback: IdentityHeaders): IdentityHeaders {
  if (node === undefined) return fallback
  const m = r.map(node, path, IDENTITY_HEADER_KEYS)
  if (m === undefined) return fallback
  const header = r.str({ check: checkHeaderName })
  const headers: IdentityHeaders = {
    subject: m.opt('subject', header, fallback.subject),
    clientId: m.opt('client_id', header, fallback.clientId),
    scope: m.opt('scope', header, fallback.scope),
    issuer: m.opt('issuer', header, fallback.issuer),
    claims: fallback.claims,
  }
  const details = m.maybe('authorization_details', header) ?? fallback.authorizationDetails
  if (details !== undefined) headers.authorizationDetails = details
  const names = new UniqueSet(r, 'identity header')
  const keyOf: Record<Exclude<keyof IdentityHeaders, 'claims' | 'authorizationDetails'>, string> = {
    subject: 'subject',
    clientId: 'client_id',
    scope: 'scope',
    issuer: 'issuer',
  }
  for (const field of ['subject', 'clientId', 'scope', 'issuer'] as const) {
    const key = keyOf[field]
    names.add(headers[field].toLowerCase(), m.get(key) ?? m.node, m.pathOf(key))
  }
  if (headers.authorizationDetails !== undefined) {
    names.add(headers.authorizationDetails.toLowerCase(), m.get('authorization_details') ?? m.node, m.pathOf('authorization_details'))
  }
  const claimsNode = m.get('claims')
  if (claimsNode !== undefined) {
    const claims: Record<string, string> = {}
    for (const e of r.entries(claimsNode, m.pathOf('claims')) ?? []) {
      const name = header(e.value, e.path)
      if (name === undefined) continue
      if (names.add(name.toLowerCase(), e.value, e.path)) claims[e.key] = name
    }
    headers.claims = claims
  }
  return headers
}

export function readGateway(r: Reader, node: Node | undefined, path: string): GatewayConfig {
  const g = r.map(node, path, GATEWAY_KEYS)
  const tokenCache = g === undefined ? undefined : r.map(g.get('token_cache'), g.pathOf('token_cache'), TOKEN_CACHE_KEYS)
  const introspectionCache = g === undefined ? undefined : r.map(g.get('introspection_cache'), g.pathOf('introspection_cache'), INTROSPECTION_CACHE_KEYS)
  return {
    realm: g?.opt('realm', r.str({ check: checkRealm }), DEFAULT_REALM) ?? DEFAULT_REALM,
    clockSkewSec: g?.opt('clock_skew', r.seconds({ max: MAX_CLOCK_SKEW_SEC }), 30) ?? 30,
    tokenCacheMaxEntries: tokenCache?.opt('max_entries', r.int({ min: 0 }), 10000) ?? 10000,
    introspectionCacheTtlSec: introspectionCache?.opt('ttl', r.seconds(), 60) ?? 60,
    introspectionNegativeTtlSec: introspectionCache?.opt('negative_ttl', r.seconds(), 5) ?? 5,
    revocationResyncSec: g?.opt('revocation_resync', r.seconds({ min: 1 }), 30) ?? 30,
    streamExpiryGraceSec: g?.opt('stream_expiry_grace', r.seconds(), DEFAULT_STREAM_EXPIRY_GRACE_SEC) ?? DEFAULT_STREAM_EXPIRY_GRACE_SEC,
    identityHeaders:
      g === undefined ? DEFAULT_IDENTITY_HEADERS : readIdentityHeaders(r, g.get('identity_headers'), g.pathOf('identity_headers'), DEFAULT_IDENTITY_HEADERS),
    trustedProxies: g?.opt('trusted_proxies', r.list(r.str({ check: checkIpRange })), []) ?? [],
    clientCertificateHeader: g?.maybe('client_certificate_header', r.str({ check: checkCertificateHeader })) ?? null,
  }
}

/** A header name the gateway does not own otherwise (it strips this one from every forwarded request). */
function checkCertificateHeader(value: string): string | undefined {
  if (!HTTP_TOKEN.test(value)) return `\`${value}\` is not a valid header name`
  if (RESERVED_HEADERS.has(value.toLowerCase()) || value.toLowerCase().startsWith('x-forwarded-for')) return `\`${value}\` is a header the gateway manages`
  return undefined
}
