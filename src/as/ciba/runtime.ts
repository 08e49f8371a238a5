/**
 * What the CIBA endpoints of one Runtime share besides the approval desk (OpenID CIBA Core 1.0,
 * docs/approvals.md): the ping deliveries, and the YAML people's emails a `login_hint` may name.
 */
import type { UserConfig } from '../../config/validated-config.js'
import type { CibaPings } from './ping.js'

/** YAML people by lower-cased email, built once per Runtime: an email two people share maps to both (and names nobody). */
export function emailIndex(users: Iterable<{ username: string; claims: Readonly<Record<string, unknown>> }>): ReadonlyMap<string, readonly string[]> {
  const out = new Map<string, string[]>()
  for (const u of users) {
    const email = u.claims.email
    if (typeof email !== 'string' || email === '') continue
    const key = email.toLowerCase()
    out.set(key, [...(out.get(key) ?? []), u.username])
  }
  return out
}

export class CibaRuntime {
  readonly pings: CibaPings
  /** YAML people by lower-cased email (login-hint.ts). */
  readonly emails: ReadonlyMap<string, readonly string[]>

  constructor(pings: CibaPings, users: Iterable<UserConfig>) {
    this.pings = pings
    this.emails = emailIndex(users)
  }
}
