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

/** `*` as any run of characters; everything else literal; the whole name must match. */
function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[\\^$.|?+()[\]{}]/g, '\\$&'))
    .join('[\\s\\S]*')
  return new RegExp(`^${body}$`, 'u')
}
