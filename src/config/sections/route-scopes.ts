import type { MapView, Reader } from '../reader.js'
import { SCOPE_TOKEN } from '../values.js'
import { readPerMethod } from './route-methods.js'

/** Reads one scope name (RFC 6749 3.3: `scope-token`). */
export function scopeName(r: Reader): ReturnType<Reader['str']> {
  return r.str({ check: (v) => (SCOPE_TOKEN.test(v) ? undefined : `\`${v}\` is not a valid scope name (RFC 6749 3.3)`) })
}

/** A route's `scopes`: per method (or `"*"`), the scopes a token needs (RFC 6750 3.1). */
export function readScopeRules(r: Reader, m: MapView, isPublic: boolean, methods: string[] | null): Record<string, string[]> {
  const node = m.get('scopes')
  if (node === undefined) return {}
  if (isPublic) {
    r.problem(node, m.pathOf('scopes'), 'a public route takes no token, so it has no scopes; remove `scopes` or `public: true`')
    return {}
  }
  const list = r.list(scopeName(r))
  return readPerMethod(
    r,
    r.entries(node, m.pathOf('scopes')) ?? [],
    methods,
    (key) => `\`${key}\` is not an HTTP method or \`"*"\` (any method)`,
    (value, path) => {
      const scopes = list(value, path)
      return scopes === undefined ? undefined : [...new Set(scopes)]
    },
  )
}
