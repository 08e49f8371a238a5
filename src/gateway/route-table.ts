/**
 * The compiled route matcher, built once per Runtime. Routes match on a
 * path prefix at segment boundaries (`/orders` matches `/orders` and
 * `/orders/1`, never `/ordersx`; `/` matches every path) and on an optional
 * host. The most specific route wins, deterministically: the longest prefix,
 * then a host-specific route over an any-host one, then a method-specific
 * route over an any-method one, then the order in the config.
 *
 * A route with `match.case_insensitive` compares its prefix with the path
 * lower-cased (ASCII: normalized paths hold nothing else), for upstreams that
 * route `/ADMIN` and `/admin` alike; every other route matches case by case.
 *
 * A shorter prefix never catches a request that a longer prefix matched on
 * path and host: when none of the routes of that prefix takes the method,
 * the answer is 405 with Allow, not a fall-through to a laxer route.
 */
import type { RouteConfig } from '../config/validated-config.js'

const SLASH = 0x2f

/** The outcome of a match; the `route` objects are built once, so matching allocates nothing. */
export type RouteMatch<T> = { readonly kind: 'route'; readonly value: T } | { readonly kind: 'method'; readonly allow: readonly string[] }

interface Entry<T> {
  readonly prefix: string
  readonly prefixLen: number
  readonly host: string | null
  readonly methods: ReadonlySet<string> | null
  /** Compare against the lower-cased path (the prefix is stored lower-cased). */
  readonly caseInsensitive: boolean
  readonly index: number
  readonly hit: RouteMatch<T>
}

/** True when `prefix` matches `path` at a segment boundary. */
export function prefixMatches(path: string, prefix: string): boolean {
  if (!path.startsWith(prefix)) return false
  const n = prefix.length
  return n === 1 || path.length === n || path.charCodeAt(n) === SLASH
}

/**
 * The path forwarded with `strip_prefix`: the matched prefix removed, a
 * leading `/` kept (`/orders/1` → `/1`, `/orders` → `/`).
 */
export function stripPrefix(path: string, prefix: string): string {
  if (prefix.length === 1) return path
  return path.length === prefix.length ? '/' : path.slice(prefix.length)
}

export class RouteTable<T> {
  readonly #entries: readonly Entry<T>[]
  /** False in the common case: the path is then never lower-cased. */
  readonly #anyCaseInsensitive: boolean
  /** False when no route names a host: the Host header is then never parsed. */
  readonly usesHost: boolean
  readonly size: number

  /** `items` in config order; `matchOf` gives each one's (already normalized) match block. */
  constructor(items: readonly T[], matchOf: (item: T) => RouteConfig['match']) {
    const entries = items.map((value, index): Entry<T> => {
      const m = matchOf(value)
      return {
        prefix: m.caseInsensitive ? m.path.toLowerCase() : m.path,
        prefixLen: m.path.length,
        host: m.host,
        methods: m.methods === null ? null : new Set(m.methods),
        caseInsensitive: m.caseInsensitive,
        index,
        hit: Object.freeze({ kind: 'route', value }),
      }
    })
    entries.sort(
      (a, b) =>
        b.prefixLen - a.prefixLen ||
        Number(b.host !== null) - Number(a.host !== null) ||
        Number(b.methods !== null) - Number(a.methods !== null) ||
        a.index - b.index,
    )
    this.#entries = entries
    this.usesHost = entries.some((e) => e.host !== null)
    this.#anyCaseInsensitive = entries.some((e) => e.caseInsensitive)
    this.size = entries.length
  }

  /**
   * The route for a normalized path, a lower-cased host without port (or null)
   * and an upper-case method; `undefined` when no route matches path and host
   * (the caller answers 404: fail closed).
   */
  match(path: string, host: string | null, method: string): RouteMatch<T> | undefined {
    let matchedLen = -1
    let allow: Set<string> | null = null
    // Normalized paths are ASCII, so lower-casing keeps every length.
    const lower = this.#anyCaseInsensitive ? path.toLowerCase() : path
    for (const e of this.#entries) {
      // At most one prefix of each length can match a given path, so once a
      // prefix matched on path and host, shorter entries are another group.
      if (matchedLen !== -1 && e.prefixLen !== matchedLen) break
      if (!prefixMatches(e.caseInsensitive ? lower : path, e.prefix)) continue
      if (e.host !== null && e.host !== host) continue
      matchedLen = e.prefixLen
      if (e.methods === null || e.methods.has(method)) return e.hit
      allow ??= new Set<string>()
      for (const m of e.methods) allow.add(m)
    }
    return allow === null ? undefined : { kind: 'method', allow: [...allow].sort() }
  }
}
