import type { Node } from 'yaml'
import type { AuthenticationRequirement } from '../validated-config.js'
import type { MapView, Reader } from '../reader.js'
import { SCOPE_TOKEN } from '../values.js'
import { meetsAcr } from '../../tokens/acr.js'
import { keysAt } from '../contract.js'
import { readPerMethod } from './route-methods.js'

/** `{ acr, max_age }`: a step-up requirement (RFC 9470). */
export const AUTHENTICATION_KEYS = keysAt('#/$defs/authenticationRequirement')

/**
 * Whether a token whose acr is `value` meets every list: exactly, or (for
 * the built-in issuer, `ranked`) by its own ranking, `pwd` < `mfa` < `phr`
 * (src/gateway/step-up.ts).
 */
export function acceptedByAll(value: string, lists: ReadonlyArray<readonly string[]>, ranked: boolean): boolean {
  return lists.every((list) => list.includes(value) || (ranked && meetsAcr({ acr: value }, list)))
}

/** RFC 9470 3: an acr value travels space-separated in a quoted `acr_values`, so it has a scope token's grammar. */
const acrValue = (r: Reader): ReturnType<Reader['str']> =>
  r.str({ check: (v) => (SCOPE_TOKEN.test(v) ? undefined : `\`${v}\` is not an acr value (printable ASCII without spaces, \`"\` or \`\\\`)`) })

/**
 * One step-up requirement, `{ acr: [...], max_age: 5m }`, at least one of
 * the two. undefined when refused (the problem is recorded).
 */
export function readRequirement(r: Reader, node: Node | undefined, path: string, allowEmpty = false): AuthenticationRequirement | undefined {
  const a = r.map(node, path, AUTHENTICATION_KEYS)
  if (a === undefined) return undefined
  if (allowEmpty && a.node !== undefined && r.entries(a.node, path)?.length === 0) return { acr: null, maxAgeSec: null }
  if (!a.has('acr') && !a.has('max_age')) {
    r.problem(node, path, 'name `acr` (the sign-in methods accepted), `max_age` (how recent the sign-in must be), or both')
    return undefined
  }
  const acr = a.maybe(
    'acr',
    r.list(acrValue(r), { nonEmpty: true, emptyMessage: 'list the acr values accepted, or remove `acr`: an empty list would accept no sign-in' }),
  )
  const maxAgeSec = a.maybe('max_age', r.seconds({ min: 0 }))
  if ((a.has('acr') && (acr === undefined || acr.length === 0)) || (a.has('max_age') && maxAgeSec === undefined)) return undefined
  return { acr: acr === undefined ? null : [...new Set(acr)], maxAgeSec: maxAgeSec ?? null }
}

/**
 * `authentication` (RFC 9470 step-up): `{ acr, max_age }` for every method,
 * or method (or `"*"`) to one, as `scopes` is written. A method without a
 * rule of its own takes `"*"`'s, else every listed rule at once (fail
 * closed, as scopes do), so their `acr` lists must share a value. A method
 * written `{}` needs no step-up (`"*": {}` lets the unlisted ones off).
 */
export function readAuthentication(
  r: Reader,
  m: MapView,
  isPublic: boolean,
  methods: string[] | null,
  ranked: boolean,
): Record<string, AuthenticationRequirement> {
  const node = m.get('authentication')
  if (node === undefined) return {}
  const where = m.pathOf('authentication')
  if (isPublic) {
    r.problem(node, where, 'a public route takes no token, so it cannot demand a sign-in; remove `authentication` or `public: true`')
    return {}
  }
  const entries = r.entries(node, where)
  if (entries === undefined) return {}
  if (entries.length === 0 || entries.some((e) => AUTHENTICATION_KEYS.includes(e.key))) {
    const all = readRequirement(r, node, where)
    return all === undefined ? {} : { '*': all }
  }
  const rules = readPerMethod(
    r,
    entries,
    methods,
    (key) => `\`${key}\` is not \`acr\`, \`max_age\`, an HTTP method or \`"*"\` (any method)`,
    (value, path) => readRequirement(r, value, path, true),
  )
  const lists = Object.values(rules).flatMap((rule) => (rule.acr === null ? [] : [rule.acr]))
  if (rules['*'] === undefined && lists.length > 1 && !lists.flat().some((v) => acceptedByAll(v, lists, ranked))) {
    r.problem(
      node,
      where,
      'a method without a rule of its own must meet every rule listed here, and no acr value is in all of them; add a `"*"` rule for the other methods',
    )
  }
  return rules
}
