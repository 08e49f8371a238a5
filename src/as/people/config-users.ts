import type { UserConfig } from '../../config/validated-config.js'

/**
 * The configured user whose `sub` is `sub`. `sub` defaults to the username,
 * so the username map answers most lookups; a scan covers explicit subs
 * (the user list is config, and small).
 */
export function configUserBySub(users: ReadonlyMap<string, UserConfig>, sub: string): UserConfig | undefined {
  const direct = users.get(sub)
  if (direct !== undefined && direct.sub === sub) return direct
  for (const user of users.values()) if (user.sub === sub) return user
  return undefined
}
