/**
 * The admin pages' own session (docs/admin.md "Pages"). The pages are a
 * first-party client of bearward's own authorization server (sign-in.ts):
 * their session is the admin access token that sign-in earned, sealed
 * (AES-GCM, a key derived from the signing keys, so every instance opens
 * it) in the `bw_admin` cookie: HttpOnly, SameSite=Strict, never the
 * sign-in pages' `bw_session`. Every page request verifies that token as the
 * admin API does (verifyOwnAccessToken: revocation, expiry) and asks more of
 * it: a person in `admin_api.people`, `bearward:admin`, `acr` mfa, and a
 * sign-in no older than {@link PAGES_MAX_AGE_SEC}. The cookie is one of
 * OWN_COOKIES, so the gateway never forwards it to an upstream.
 */
import { createHash } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { epochSeconds } from '../../clock.js'
import { ADMIN_SCOPE } from '../../config/sections/admin-api.js'
import { Sealer, sealingKey } from '../../crypto/sealed.js'
import { parseCookies, serializeCookie } from '../../http/cookies.js'
import type { AsContext } from '../../as/context.js'
import { type OwnAccessToken, verifyOwnAccessToken } from '../../as/verify-token.js'
import { meetsAcr } from '../../tokens/acr.js'
import type { KeySet } from '../../keys/keyset.js'
import { adminAudience } from '../audience.js'
import type { AdminContext } from '../context.js'

/** How fresh the second factor must be: an older sign-in is sent to sign in again (`max_age`). */
export const PAGES_MAX_AGE_SEC = 900

/** Longest cookie value worth opening: a sealed access token is far shorter. */
const MAX_COOKIE_LENGTH = 8192

export interface PagesSession {
  readonly claims: OwnAccessToken
  /** The CSRF token every form of this session carries. */
  readonly csrf: string
}

/** Why there is no usable session: none at all, or a sign-in too old or without a second factor (step up). */
export type NoSession = 'none' | 'step_up' | 'not_admin'

const sealers = new WeakMap<KeySet, Sealer>()

function sealerOf(keys: KeySet): Sealer {
  let sealer = sealers.get(keys)
  if (sealer === undefined) {
    sealer = new Sealer(keys.all.map((k) => sealingKey(Buffer.from(String(k.privateKey.export({ format: 'jwk' }).d), 'base64url'), 'admin pages')))
    sealers.set(keys, sealer)
  }
  return sealer
}

/** The sealed value of `plain` for the cookie `name`: a value sealed for one cookie does not open as another. */
export function seal(as: AsContext, name: string, plain: string): string {
  return sealerOf(as.keys).seal(plain, name)
}

export function unseal(as: AsContext, name: string, sealed: string | undefined): string | null {
  if (sealed === undefined || sealed.length > MAX_COOKIE_LENGTH) return null
  const opened = sealerOf(as.keys).open(sealed, name)
  return opened.ok ? opened.plain : null
}

/**
 * The CSRF token of a session: derived from its access token (secret, one
 * per sign-in), so it needs no storage, and another session's token never matches.
 */
export function csrfOf(token: string): string {
  return createHash('sha256').update('bearward admin pages csrf\0').update(token).digest('base64url')
}

/** The session cookie holding `token` (sealed); `null` clears it. */
export function sessionCookie(as: AsContext, token: string | null, secure: boolean): string {
  return serializeCookie('bw_admin', token === null ? '' : seal(as, 'bw_admin', token), {
    secure,
    sameSite: 'Strict',
    ...(token === null ? { maxAgeSec: 0 } : {}),
  })
}

/** The cookie of `name` as the browser sent it (`__Host-` prefixed under https). */
export function cookieOf(req: IncomingMessage, name: 'bw_admin' | 'bw_admin_flow', secure: boolean): string | undefined {
  return parseCookies(req.headers.cookie).get(secure ? `__Host-${name}` : name)
}

/** The signed-in admin of `req`, or why there is none. */
export async function currentAdmin(req: IncomingMessage, admin: AdminContext, secure: boolean): Promise<PagesSession | NoSession> {
  const token = unseal(admin.as, 'bw_admin', cookieOf(req, 'bw_admin', secure))
  if (token === null) return 'none'
  const claims = await verifyOwnAccessToken(admin.as, token)
  if (claims === null || !claims.aud.includes(adminAudience(admin.as.issuer))) return 'none'
  if (claims.grantId === null || !claims.scope.split(' ').includes(ADMIN_SCOPE)) return 'none'
  if (!admin.config.peopleSubs.includes(claims.sub)) return 'not_admin'
  if (!freshSecondFactor(claims, epochSeconds(admin.as.clock))) return 'step_up'
  return { claims, csrf: csrfOf(token) }
}

/** A sign-in with a second factor (`acr` mfa or better), no older than {@link PAGES_MAX_AGE_SEC}. */
export function freshSecondFactor(claims: Pick<OwnAccessToken, 'acr' | 'amr' | 'authTime'>, now: number): boolean {
  if (!meetsAcr({ ...(claims.acr === undefined ? {} : { acr: claims.acr }), ...(claims.amr === undefined ? {} : { amr: claims.amr }) }, ['mfa'])) return false
  return claims.authTime !== null && now - claims.authTime <= PAGES_MAX_AGE_SEC
}
