/**
 * A person as the admin API shows it: never a password or its hash, only
 * whether one is set. `source: config` is a YAML user (claims read-only, the
 * password in YAML); `admin` was created through this API.
 */
import type { UserConfig } from '../../config/validated-config.js'
import type { PersonRecord } from '../../store/types.js'

export interface PersonView {
  id: string
  username: string
  sub: string
  source: 'config' | 'admin'
  claims: Record<string, unknown>
  has_password: boolean
  disabled: boolean
  revision?: number
  created_at?: number
  updated_at?: number
}

export function configPersonView(u: UserConfig, disabled: boolean): PersonView {
  return { id: u.username, username: u.username, sub: u.sub, source: 'config', claims: { ...u.claims }, has_password: true, disabled }
}

export function storedPersonView(p: PersonRecord): PersonView {
  return {
    id: p.username,
    username: p.username,
    sub: p.sub,
    source: 'admin',
    claims: { ...p.claims },
    has_password: p.passwordHash !== null,
    disabled: p.disabled,
    revision: p.version,
    created_at: p.createdAt,
    updated_at: p.updatedAt,
  }
}
