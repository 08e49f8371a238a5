/** `authorization_server.users[]`: the accounts that can log in on the login page. */
import type { Node } from 'yaml'
import type { UserConfig } from '../validated-config.js'
import { checkSecretHashShape } from '../hash-format.js'
import { demoSecretOf } from '../demo.js'
import type { Reader } from '../reader.js'
import { UniqueSet } from '../unique.js'
import { keysAt } from '../contract.js'

export const USER_KEYS = keysAt('#/$defs/user')

export function readUsers(r: Reader, node: Node, path: string): UserConfig[] {
  const users: UserConfig[] = []
  const usernames = new UniqueSet(r, 'username')
  const subjects = new UniqueSet(r, 'sub')
  for (const item of r.items(node, path) ?? []) {
    const u = r.map(item.node, item.path, USER_KEYS)
    if (u === undefined) continue
    const username = u.req('username', r.str())
    const passwordHash = u.req('password_hash', r.str({ check: checkSecretHashShape }), " (create one with `printf '%s' PASSWORD | bearward hash-secret`)")
    if (passwordHash !== undefined) {
      const demo = demoSecretOf(passwordHash)
      if (demo !== undefined) {
        r.warn(
          u.get('password_hash'),
          u.pathOf('password_hash'),
          `this is the public DEMO password \`${demo}\` from the example config; replace it or remove the user`,
        )
      }
    }
    const sub = u.opt('sub', r.str(), username ?? '')
    const claimsNode = u.get('claims')
    let claims: Record<string, unknown> = {}
    const readClaims = claimsNode === undefined ? undefined : r.plainMap(claimsNode, u.pathOf('claims'))
    if (readClaims !== undefined) {
      claims = readClaims
      if ('sub' in claims) {
        r.problem(claimsNode, `${u.pathOf('claims')}.sub`, "set the subject with the user's `sub` key, not in `claims`")
      }
    }
    if (username === undefined) continue
    usernames.add(username, u.get('username'), u.pathOf('username'))
    subjects.add(sub, u.get('sub') ?? u.get('username'), u.has('sub') ? u.pathOf('sub') : u.pathOf('username'))
    if (passwordHash === undefined) continue
    users.push({ username, passwordHash, sub, claims })
  }
  return users
}
