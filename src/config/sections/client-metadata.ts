/**
 * The RFC 7591 2 metadata a client shows to people: `logo_uri`, `policy_uri`,
 * `tos_uri`, and the OpenID Connect RP-Initiated Logout 1.0 §3.1
 * `post_logout_redirect_uris`. Kept apart from `clients.ts` because these are
 * what a page renders, so each value is checked for what it could do there:
 * a logo is an image and never a script, links are web pages.
 */
import type { ClientMetadata } from '../validated-config.js'
import type { MapView, Reader } from '../reader.js'
import { parseAbsoluteUrl } from '../values.js'
import { uriCharacterProblem } from '../client-values.js'

/** Raster image types a browser renders without running anything (SVG can carry script: refused). */
const LOGO_TYPES: Readonly<Record<string, (bytes: Buffer) => boolean>> = {
  png: (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  jpeg: (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  gif: (b) => b.subarray(0, 6).toString('latin1') === 'GIF87a' || b.subarray(0, 6).toString('latin1') === 'GIF89a',
  webp: (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
}

/** An inline logo is repeated in every consent page: keep it small. */
export const MAX_DATA_LOGO_BYTES = 32 * 1024

const DATA_LOGO = /^data:image\/(png|jpeg|gif|webp);base64,([A-Za-z0-9+/]+={0,2})$/

/** Schemes a post-logout redirect may never have: they run code or read local data where they land. */
const SCRIPT_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:'])

function isLoopbackHost(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '127.0.0.1' || hostname === '[::1]'
}

/**
 * `logo_uri`: an `https:` URL (the consent page's CSP then allows exactly that
 * origin), or a base64 `data:` URL of a PNG, JPEG, GIF or WebP whose bytes
 * are that type. Never SVG, never `javascript:`.
 */
export function checkLogoUri(value: string): string | undefined {
  if (value.startsWith('data:')) {
    const m = DATA_LOGO.exec(value)
    if (m === null) {
      return 'an inline logo must be `data:image/png;base64,...` (or jpeg, gif, webp); SVG and other types are refused because they can carry script'
    }
    const bytes = Buffer.from(m[2] ?? '', 'base64')
    if (bytes.length > MAX_DATA_LOGO_BYTES) return `an inline logo may be at most ${MAX_DATA_LOGO_BYTES / 1024} KiB; serve a larger one over https`
    const matches = LOGO_TYPES[m[1] ?? '']
    if (matches === undefined || !matches(bytes)) return `the data is not a ${m[1]} image`
    return undefined
  }
  const chars = uriCharacterProblem(value)
  if (chars !== undefined) return chars
  const url = parseAbsoluteUrl(value)
  if (url === undefined || url.protocol !== 'https:') return `\`${value}\` is not an https URL; a logo is an https URL or a data:image/png;base64 URL`
  if (url.username !== '' || url.password !== '') return 'credentials in the URL are not allowed here'
  if (value.includes('#')) return 'the URL must not have a fragment'
  return undefined
}

/** `policy_uri`, `tos_uri`: web pages people open, so https (http only on this machine, for development). */
export function checkPageUri(value: string): string | undefined {
  const chars = uriCharacterProblem(value)
  if (chars !== undefined) return chars
  const url = parseAbsoluteUrl(value)
  if (url === undefined) return `\`${value}\` is not an absolute URL; write e.g. \`https://app.example.com/privacy\``
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `\`${url.protocol}\` URLs are not allowed here; use https://`
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) return 'use https (http is accepted only for localhost, 127.0.0.1 and [::1])'
  if (url.username !== '' || url.password !== '') return 'credentials in the URL are not allowed here'
  return undefined
}

/**
 * `backchannel_logout_uri` (OpenID Connect Back-Channel Logout 1.0 2.2): an absolute https URL
 * (http only on this machine, for development), no credentials, no fragment (the spec forbids it).
 * Where a stranger's may be fetched is decided again at delivery (the metadata-document address rules).
 */
export function checkBackchannelLogoutUri(value: string): string | undefined {
  const chars = uriCharacterProblem(value)
  if (chars !== undefined) return chars
  const url = parseAbsoluteUrl(value)
  if (url === undefined) return `\`${value}\` is not an absolute URL; write e.g. \`https://app.example.com/logout/backchannel\``
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return `\`${url.protocol}\` URLs are not allowed here; use https://`
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) return 'use https (http is accepted only for localhost, 127.0.0.1 and [::1])'
  if (url.username !== '' || url.password !== '') return 'credentials in the URL are not allowed here'
  if (value.includes('#')) return 'a back-channel logout URI must not contain a fragment'
  return undefined
}

/** A post-logout redirect URI: absolute, no fragment (matched exactly, like redirect URIs), no script scheme. */
export function checkPostLogoutRedirectUri(value: string): string | undefined {
  // Printable ASCII only: a raw CR, LF or U+2028 cannot go into a Location header.
  const chars = uriCharacterProblem(value)
  if (chars !== undefined) return chars
  const url = parseAbsoluteUrl(value)
  if (url === undefined) return `\`${value}\` is not an absolute URI; post-logout redirect URIs are compared by exact string match, so write the full URI`
  if (SCRIPT_SCHEMES.has(url.protocol)) return `\`${url.protocol}\` URIs cannot be redirect targets`
  if (value.includes('#')) return 'a post-logout redirect URI must not contain a fragment'
  return undefined
}

/** Read the metadata keys of one client map. */
export function readClientMetadata(r: Reader, c: MapView): ClientMetadata {
  return {
    logoUri: c.maybe('logo_uri', r.str({ check: checkLogoUri })) ?? null,
    policyUri: c.maybe('policy_uri', r.str({ check: checkPageUri })) ?? null,
    tosUri: c.maybe('tos_uri', r.str({ check: checkPageUri })) ?? null,
    postLogoutRedirectUris: [...new Set(c.opt('post_logout_redirect_uris', r.list(r.str({ check: checkPostLogoutRedirectUri })), []))],
  }
}
