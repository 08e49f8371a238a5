/**
 * Per-name rules of an MCP route (`mcp.tools`, `mcp.resources`,
 * `mcp.prompts`): each key is a name (a tool or prompt name, a resource URI)
 * or a pattern in which `*` stands for any run of characters, `/` included,
 * and every other character for itself (`orders://*`, `admin_*`). A name
 * needs the scopes of every key that matches it, so two overlapping rules
 * both apply: a broader pattern never lowers a narrower one.
 *
 * A name is matched under every reading a server may give it, and a key
 * under every spelling it stands for (name-text.ts, resource-uri.ts): a
 * rule that matches any reading applies, so a spelling a server normalises
 * needs the scopes of the name it becomes.
 */
import { nameReadings, foldName } from './name-text.js'
import { uriKeyForms, uriReadings } from './resource-uri.js'

/** How one kind of name is read: a key's spellings, and a requested name's readings. */
export interface NameReading {
  keyForms(key: string): readonly string[]
  readings(name: string): readonly string[]
}

/** Tool and prompt names: as written, and folded (case, NFKC). */
export const PLAIN_NAMES: NameReading = {
  keyForms: (key) => [...new Set([key, foldName(key)])],
  readings: nameReadings,
}

/** Resource URIs: as written, parsed (WHATWG) and bare. */
export const RESOURCE_URIS: NameReading = { keyForms: uriKeyForms, readings: uriReadings }

/** Keys compiled for lookup: exact spellings in a map, patterns as expressions. */
class Matcher<T> {
  readonly #exact = new Map<string, T[]>()
  readonly #patterns: Array<{ readonly test: RegExp; readonly value: T }> = []
  readonly #reading: NameReading

  constructor(rules: Readonly<Record<string, T>>, reading: NameReading) {
    this.#reading = reading
    for (const [key, value] of Object.entries(rules)) {
      for (const form of reading.keyForms(key)) {
        if (form.includes('*')) this.#patterns.push({ test: globToRegExp(form), value })
        else {
          const list = this.#exact.get(form) ?? []
          if (!list.includes(value)) list.push(value)
          this.#exact.set(form, list)
        }
      }
    }
  }

  get empty(): boolean {
    return this.#exact.size === 0 && this.#patterns.length === 0
  }

  /** The values of every key that matches a reading of `name`: exact keys' first, each once. */
  of(name: string): T[] {
    const readings = this.#reading.readings(name)
    const out: T[] = []
    const add = (v: T): void => {
      if (!out.includes(v)) out.push(v)
    }
    for (const r of readings) for (const v of this.#exact.get(r) ?? []) add(v)
    for (const p of this.#patterns) if (readings.some((r) => p.test.test(r))) add(p.value)
    return out
  }
}

/** One rule list, compiled once per Runtime. */
export class NameRules {
  readonly #matcher: Matcher<readonly string[]>

  constructor(rules: Readonly<Record<string, readonly string[]>>, reading: NameReading = PLAIN_NAMES) {
    this.#matcher = new Matcher(rules, reading)
  }

  /** True when no rule is configured (nothing to require, nothing to filter). */
  get empty(): boolean {
    return this.#matcher.empty
  }

  /** The scopes `name` needs beyond the route's: those of every matching key (empty when none matches). */
  scopesOf(name: string): readonly string[] {
    return [...new Set(this.#matcher.of(name).flat())]
  }
}

/**
 * Values of the same kind of keys that are not scope lists (the step-up of
 * a tool, RFC 9470): every value whose key matches a name, the exact key's
 * first, so that all of them can be required together.
 */
export class NameValues<T> {
  readonly #matcher: Matcher<T>

  constructor(rules: Readonly<Record<string, T>>, reading: NameReading = PLAIN_NAMES) {
    this.#matcher = new Matcher(rules, reading)
  }

  get empty(): boolean {
    return this.#matcher.empty
  }

  /** The values of every key that matches `name` (empty when none does). */
  of(name: string): readonly T[] {
    return this.#matcher.of(name)
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
