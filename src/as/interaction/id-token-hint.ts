/**
 * `id_token_hint` at the end-session endpoint (OpenID Connect RP-Initiated
 * Logout 1.0 §2): an ID token this server issued, which names the person the
 * client believes is signed in and the client itself (`aud`).
 */
import { compactVerify, errors as joseErrors, type CompactJWSHeaderParameters } from 'jose'
import type { KeyObject } from 'node:crypto'
import type { AsContext } from '../context.js'
import { looksLikeJwt } from '../../tokens/jwt-shape.js'

/** What a verified hint tells: who, and for which client(s). */
export interface IdTokenHint {
  sub: string
  /** `aud`: the client ids the token was issued to (ours always name exactly one). */
  audiences: string[]
  /** `azp`, when present. */
  azp: string | null
}

/** Longest hint worth verifying; ours are far shorter. */
const MAX_HINT_LENGTH = 16384

function stringList(value: unknown): string[] | null {
  if (typeof value === 'string' && value !== '') return [value]
  if (Array.isArray(value) && value.length > 0 && value.every((v) => typeof v === 'string' && v !== '')) return value as string[]
  return null
}

/**
 * The hint's claims when it is an ID token of this issuer: signed by one of
 * our keys (alg fixed per key, never taken from the token), `typ: JWT` (so an
 * access token, `at+jwt`, is not accepted in its place), `iss` exactly our
 * issuer, with `sub` and `aud`. Its expiry is not checked: §2 expects hints
 * whose ID token has expired, as a person often signs out long after login.
 * Null for anything else.
 *
 * @see https://openid.net/specs/openid-connect-rpinitiated-1_0.html#RPLogout
 */
export async function verifyIdTokenHint(as: AsContext, token: string): Promise<IdTokenHint | null> {
  if (token.length > MAX_HINT_LENGTH || !looksLikeJwt(token)) return null
  const keyFor = (header: CompactJWSHeaderParameters): KeyObject => {
    const key = header.kid === undefined ? undefined : as.keys.find(header.kid)
    if (key === undefined || key.alg !== header.alg) throw new joseErrors.JWKSNoMatchingKey()
    return key.publicKey
  }
  let claims: Record<string, unknown>
  try {
    const { payload, protectedHeader } = await compactVerify(token, keyFor, { algorithms: as.keys.algorithms() })
    if (protectedHeader.typ !== 'JWT') return null
    const parsed: unknown = JSON.parse(new TextDecoder().decode(payload))
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null
    claims = parsed as Record<string, unknown>
  } catch {
    return null
  }
  const audiences = stringList(claims.aud)
  if (claims.iss !== as.issuer || typeof claims.sub !== 'string' || claims.sub === '' || audiences === null) return null
  return { sub: claims.sub, audiences, azp: typeof claims.azp === 'string' && claims.azp !== '' ? claims.azp : null }
}
