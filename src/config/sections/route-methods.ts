import type { Node } from 'yaml'
import type { Reader } from '../reader.js'
import { UniqueSet } from '../unique.js'
import { HTTP_TOKEN } from '../values.js'

/**
 * A mapping from method to rule, as `scopes` and `authentication` are
 * written: each key an HTTP method (compared in upper case) or `"*"` (any
 * method), written once, and one the route matches (`methods`, null for
 * every method); each value read by `read`. `notMethod` is the problem for a
 * key that is neither.
 */
export function readPerMethod<T>(
  r: Reader,
  entries: ReadonlyArray<{ key: string; keyNode: Node; value: Node; path: string }>,
  methods: readonly string[] | null,
  notMethod: (key: string) => string,
  read: (node: Node, path: string) => T | undefined,
): Record<string, T> {
  const rules: Record<string, T> = {}
  const keys = new UniqueSet(r, 'method')
  for (const e of entries) {
    if (e.key !== '*' && !HTTP_TOKEN.test(e.key)) {
      r.problem(e.keyNode, e.path, notMethod(e.key))
      continue
    }
    const method = e.key === '*' ? '*' : e.key.toUpperCase()
    if (!keys.add(method, e.keyNode, e.path)) continue
    if (method !== '*' && methods !== null && !methods.includes(method)) {
      r.problem(e.keyNode, e.path, `this rule can never apply: the route only matches ${methods.join(', ')}`)
      continue
    }
    const rule = read(e.value, e.path)
    if (rule !== undefined) rules[method] = rule
  }
  return rules
}
