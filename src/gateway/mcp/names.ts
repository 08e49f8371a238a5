/**
 * Per-name rules of an MCP route (`mcp.tools`, `mcp.resources`,
 * `mcp.prompts`): each key is a name (a tool or prompt name, a resource URI)
 * or a pattern in which `*` stands for any run of characters, `/` included,
 * and every other character for itself (`orders://*`, `admin_*`). A name
 * needs the scopes of every key that matches it, so two overlapping rules
 * both apply: a broader pattern never lowers a narrower one.
 */

/** One rule list, compiled once per Runtime. */
export class NameRules {
  readonly #exact: ReadonlyMap<string, readonly string[]>
  readonly #patterns: ReadonlyArray<{ readonly test: RegExp; readonly scopes: readonly string[] }>

  constructor(rules: Readonly<Record<string, readonly string[]>>) {
    const exact = new Map<string, readonly string[]>()
    const patterns: Array<{ test: RegExp; scopes: readonly string[] }> = []
    for (const [key, scopes] of Object.entries(rules)) {
      if (key.includes('*')) patterns.push({ test: globToRegExp(key), scopes })
      else exact.set(key, scopes)
    }
    this.#exact = exact
    this.#patterns = patterns
  }

  /** True when no rule is configured (nothing to require, nothing to filter). */
  get empty(): boolean {
    return this.#exact.size === 0 && this.#patterns.length === 0
  }

  /** The scopes `name` needs beyond the route's: those of every matching key (empty when none matches). */
  scopesOf(name: string): readonly string[] {
    const own = this.#exact.get(name)
    let out: string[] | null = null
    for (const p of this.#patterns) {
      if (!p.test.test(name)) continue
      out ??= own === undefined ? [] : [...own]
      out.push(...p.scopes)
    }
    if (out === null) return own ?? []
    return [...new Set(out)]
  }
}

/**
 * Values of the same kind of keys that are not scope lists (the step-up of
 * a tool, RFC 9470): every value whose key matches a name, the exact key's
 * first, so that all of them can be required together.
 */
export class NameValues<T> {
  readonly #exact: ReadonlyMap<string, T>
  readonly #patterns: ReadonlyArray<{ readonly test: RegExp; readonly value: T }>

  constructor(rules: Readonly<Record<string, T>>) {
    const exact = new Map<string, T>()
    const patterns: Array<{ test: RegExp; value: T }> = []
    for (const [key, value] of Object.entries(rules)) {
      if (key.includes('*')) patterns.push({ test: globToRegExp(key), value })
      else exact.set(key, value)
    }
    this.#exact = exact
    this.#patterns = patterns
  }

  get empty(): boolean {
    return this.#exact.size === 0 && this.#patterns.length === 0
  }

  /** The values of every key that matches `name` (empty when none does). */
  of(name: string): readonly T[] {
    const own = this.#exact.get(name)
    const out: T[] = own === undefined ? [] : [own]
    for (const p of this.#patterns) if (p.test.test(name)) out.push(p.value)
    return out
  }
}

/** `*` as any run of characters; everything else literal; the whole name must match. */
function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[\\^$.|?+()[\]{}]/g, '\\$&'))
    .join('[\\s\\S]*')
  return new RegExp(`^${body}$`, 'u')
}
