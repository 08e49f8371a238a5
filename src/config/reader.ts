/**
 * Typed, positioned reading of a parsed YAML document. Every reader reports
 * what is wrong with a value as a {@link ConfigProblem} (file, line, column,
 * dotted key path, reason) and carries on, so one run finds every problem.
 *
 * Readers return `undefined` for a value they refused (the problem is already
 * recorded); callers substitute a default and keep validating, and the final
 * result is discarded when any problem was recorded.
 */
import { existsSync, statSync } from 'node:fs'
import { isAbsolute, resolve as resolvePath } from 'node:path'
import { isAlias, isMap, isScalar, isSeq, type Document, type LineCounter, type Node, type Scalar, type YAMLMap } from 'yaml'
import type { ConfigProblem } from '../errors.js'
import { envReferenceOffset } from './env-offset.js'
import { substituteEnv, type Env } from './env.js'
import { childPath, itemPath } from './key-path.js'
import { MapView, type MapEntry } from './map-view.js'
import type { Located, Read } from './read.js'
import { readBool, readBytes, readDuration, readInt, readStr, readStrOrInt, REPORTED, type ScalarAccess } from './scalar-readers.js'
import { suggest } from './suggest.js'
import { kindOf, nullAt } from './yaml-node.js'

export { MapView } from './map-view.js'
export type { Located, Read } from './read.js'

/** Deep enough for any sane config; stops alias cycles and absurd nesting. */
const MAX_DEPTH = 64

export interface ReaderOptions {
  doc: Document.Parsed
  lineCounter: LineCounter
  /** The file name used in problems, as the user gave it. */
  file: string
  /** Directory that relative file paths in the config are relative to. */
  baseDir: string
  env: Env
  /** Check that referenced files exist (default true). */
  checkFiles?: boolean
}

export class Reader {
  readonly file: string
  readonly baseDir: string
  readonly problems: ConfigProblem[] = []
  readonly warnings: ConfigProblem[] = []
  readonly #doc: Document.Parsed
  readonly #lines: LineCounter
  readonly #env: Env
  readonly #checkFiles: boolean
  readonly #source: string
  /** Substituted value per scalar, so each env problem is reported once even when aliased. */
  readonly #scalars = new Map<Scalar, unknown>()
  /**
   * Scalars whose text came (partly) from `${VAR}`. They stay strings; a
   * reader that wants a number, boolean or duration parses the text, so
   * `port: ${PORT}` works and `secret: ${SECRET}` never turns into a number.
   */
  readonly #fromEnv = new Set<Scalar>()

  constructor(opts: ReaderOptions, source: string) {
    this.#doc = opts.doc
    this.#lines = opts.lineCounter
    this.file = opts.file
    this.baseDir = opts.baseDir
    this.#env = opts.env
    this.#checkFiles = opts.checkFiles ?? true
    this.#source = source
  }

  /** 1-based line and column of `node` (plus `offset` characters), or 1:1. */
  position(node: Node | undefined, offset = 0): { line: number; col: number } {
    const start = node?.range?.[0]
    if (start === undefined) return { line: 1, col: 1 }
    return this.#lines.linePos(start + offset)
  }

  problem(node: Node | undefined, path: string, message: string, offset = 0): void {
    this.problems.push({ file: this.file, ...this.position(node, offset), path, message })
  }

  warn(node: Node | undefined, path: string, message: string): void {
    this.warnings.push({ file: this.file, ...this.position(node), path, message })
  }

  /** An environment variable's value, for switches such as `BEARWARD_ALLOW_DEMO` that are not config keys. */
  envValue(name: string): string | undefined {
    return this.#env[name]
  }

  /** "line N", for messages that point back at an earlier definition. */
  lineOf(node: Node | undefined): string {
    return `line ${this.position(node).line}`
  }

  /** Follow aliases (`*name`) to the anchored node. */
  resolve(node: unknown): Node | undefined {
    let current = node as Node | undefined
    for (let hops = 0; isAlias(current); hops++) {
      if (hops > MAX_DEPTH) return undefined
      current = current.resolve(this.#doc) as Node | undefined
    }
    return current ?? undefined
  }

  /** The scalar's value after `${VAR}` substitution, or REPORTED. */
  #scalarValue(node: Scalar, path: string): unknown {
    if (this.#scalars.has(node)) return this.#scalars.get(node)
    let value: unknown = node.value
    if (typeof value === 'string') {
      const sub = substituteEnv(value, this.#env)
      const [start, end] = node.range ?? [0, 0]
      for (const p of sub.problems) this.problem(node, path, p.message, envReferenceOffset(this.#source.slice(start, end), value, p.index))
      if (sub.problems.length > 0) value = REPORTED
      else value = sub.value
      if (sub.replaced) this.#fromEnv.add(node)
    }
    this.#scalars.set(node, value)
    return value
  }

  /** The scalar at `node` (aliases followed), or REPORTED after a type problem. */
  #scalar(node: Node, path: string, expected: string): unknown {
    const resolved = this.resolve(node)
    if (!isScalar(resolved)) {
      this.problem(resolved ?? node, path, `expected ${expected}, got ${kindOf(resolved)}`)
      return REPORTED
    }
    return this.#scalarValue(resolved, path)
  }

  /** A node to point at for a value (the alias target when aliased). */
  #at(node: Node): Node {
    return this.resolve(node) ?? node
  }

  /** What the value readers (scalar-readers.ts) use of this reader. */
  readonly #values: ScalarAccess = {
    scalar: (node, path, expected) => this.#scalar(node, path, expected),
    fromEnv: (node) => {
      const resolved = this.resolve(node)
      return isScalar(resolved) && this.#fromEnv.has(resolved)
    },
    refuse: (node, path, message) => {
      this.problem(this.#at(node), path, message)
      return undefined
    },
  }

  /** A string (non-empty unless `allowEmpty`), optionally checked by `check`. */
  str(opts: { allowEmpty?: boolean; check?: (value: string) => string | undefined; expected?: string } = {}): Read<string> {
    return readStr(this.#values, opts)
  }

  /** A string or a number (listen addresses accept a bare port). */
  strOrInt(): Read<string | number> {
    return readStrOrInt(this.#values)
  }

  bool(): Read<boolean> {
    return readBool(this.#values)
  }

  int(opts: { min?: number; max?: number } = {}): Read<number> {
    return readInt(this.#values, opts)
  }

  /**
   * One of `values`. `aliases` maps accepted spellings to a value; `refused`
   * maps known-but-unsupported values to the reason.
   */
  oneOf<T extends string>(
    values: readonly T[],
    opts: { aliases?: Readonly<Record<string, T>>; refused?: Readonly<Record<string, string>>; what?: string } = {},
  ): Read<T> {
    const allowed = values.map((v) => `\`${v}\``).join(', ')
    return (node, path) => {
      const value = this.str({ expected: `one of ${allowed}` })(node, path)
      if (value === undefined) return undefined
      if ((values as readonly string[]).includes(value)) return value as T
      const aliased = opts.aliases?.[value]
      if (aliased !== undefined) return aliased
      const refusal = opts.refused?.[value]
      if (refusal !== undefined) return this.#values.refuse(node, path, refusal)
      const guess = suggest(value, [...values, ...Object.keys(opts.aliases ?? {})])
      const didYouMean = guess === undefined ? '' : `; did you mean \`${guess}\`?`
      this.problem(this.#at(node), path, `\`${value}\` is not ${opts.what ?? 'allowed here'}: expected one of ${allowed}${didYouMean}`)
      return undefined
    }
  }

  /** A duration in whole seconds; `min`/`max` are seconds. */
  seconds(opts: { min?: number; max?: number } = {}): Read<number> {
    return readDuration(this.#values, 1000, opts, 'seconds')
  }

  /** A duration in milliseconds; `min`/`max` are milliseconds. */
  millis(opts: { min?: number; max?: number } = {}): Read<number> {
    return readDuration(this.#values, 1, opts, 'milliseconds')
  }

  /** A size in bytes (`512kb`, `10mb`, or a number of bytes). */
  bytes(opts: { min?: number } = {}): Read<number> {
    return readBytes(this.#values, opts)
  }

  /**
   * A file path, resolved against the config file's directory; a problem
   * when it does not name an existing file (caught at load, not at first use).
   */
  filePath(): Read<string> {
    return (node, path) => {
      const value = this.str()(node, path)
      if (value === undefined) return undefined
      const absolute = isAbsolute(value) ? value : resolvePath(this.baseDir, value)
      if (this.#checkFiles) {
        if (!existsSync(absolute)) return this.#values.refuse(node, path, `file not found: ${absolute}`)
        if (!statSync(absolute).isFile()) return this.#values.refuse(node, path, `not a regular file: ${absolute}`)
      }
      return absolute
    }
  }

  /** Adds a check to a reader: `check` returns a reason to refuse, or undefined. */
  checked<T>(read: Read<T>, check: (value: T) => string | undefined): Read<T> {
    return (node, path) => {
      const value = read(node, path)
      if (value === undefined) return undefined
      const reason = check(value)
      if (reason !== undefined) return this.#values.refuse(node, path, reason)
      return value
    }
  }

  // ------------------------------------------------------------ collections

  /** The items of a list, each with its path; undefined when not a list. */
  items(node: Node, path: string): Array<{ node: Node; path: string }> | undefined {
    const resolved = this.resolve(node)
    if (!isSeq(resolved)) {
      const hint = isScalar(resolved) && resolved.value !== null ? ' (write a single value as `[value]`)' : ''
      this.problem(resolved ?? node, path, `expected a list, got ${kindOf(resolved)}${hint}`)
      return undefined
    }
    return resolved.items.map((item, index) => ({
      node: (item as Node | null) ?? nullAt(resolved),
      path: itemPath(path, index),
    }))
  }

  /** A list read item by item, keeping each value's node and path for later cross-checks. */
  located<T>(read: Read<T>, opts: { nonEmpty?: boolean; emptyMessage?: string } = {}): Read<Array<Located<T>>> {
    return (node, path) => {
      const items = this.items(node, path)
      if (items === undefined) return undefined
      if (opts.nonEmpty && items.length === 0) return this.#values.refuse(node, path, opts.emptyMessage ?? 'must list at least one value')
      const out: Array<Located<T>> = []
      for (const item of items) {
        const value = read(item.node, item.path)
        if (value !== undefined) out.push({ value, node: item.node, path: item.path })
      }
      return out
    }
  }

  /** A list read item by item; refused items are dropped (problems recorded). */
  list<T>(read: Read<T>, opts: { nonEmpty?: boolean; emptyMessage?: string } = {}): Read<T[]> {
    const located = this.located(read, opts)
    return (node, path) => located(node, path)?.map((item) => item.value)
  }

  /**
   * A mapping with a fixed set of keys. Unknown keys are problems, with a
   * "did you mean" when a known key is within two edits.
   */
  map(node: Node | undefined, path: string, known: readonly string[], opts: { extensionKeys?: boolean } = {}): MapView | undefined {
    if (node === undefined) return new MapView(this, undefined, path, new Map())
    const entries = this.#mapEntries(node, path, 0)
    if (entries === undefined) return undefined
    for (const [key, entry] of entries) {
      if (known.includes(key)) continue
      // `x-...` keys hold YAML anchors for reuse (as in Compose files); they are not config.
      if (opts.extensionKeys && key.startsWith('x-')) continue
      const guess = suggest(key, known)
      const help = guess !== undefined ? `did you mean \`${guess}\`?` : `known keys here: ${known.map((k) => `\`${k}\``).join(', ')}`
      this.problem(entry.keyNode, childPath(path, key), `unknown key \`${key}\`; ${help}`)
    }
    return new MapView(this, this.resolve(node) ?? node, path, entries)
  }

  /** Every key of a free-form mapping (scope descriptions, route scope rules, ...). */
  entries(node: Node, path: string): Array<{ key: string; keyNode: Node; value: Node; path: string }> | undefined {
    const entries = this.#mapEntries(node, path, 0)
    if (entries === undefined) return undefined
    return [...entries].map(([key, e]) => ({ key, keyNode: e.keyNode, value: e.value, path: childPath(path, key) }))
  }

  #mapEntries(node: Node, path: string, depth: number): Map<string, MapEntry> | undefined {
    const resolved = this.resolve(node)
    if (!isMap(resolved) || depth > MAX_DEPTH) {
      this.problem(resolved ?? node, path, `expected a mapping (\`key: value\` lines), got ${kindOf(resolved)}`)
      return undefined
    }
    const own = new Map<string, MapEntry>()
    const merged: Array<Map<string, MapEntry>> = []
    for (const pair of (resolved as YAMLMap<unknown, unknown>).items) {
      const keyNode = this.resolve(pair.key)
      const value = (pair.value as Node | null) ?? nullAt(keyNode)
      if (isScalar(keyNode) && typeof keyNode.value === 'symbol' && keyNode.value.description === '<<') {
        merged.push(...this.#mergeSources(value, path, depth))
        continue
      }
      if (!isScalar(keyNode) || !['string', 'number', 'boolean'].includes(typeof keyNode.value)) {
        this.problem(keyNode ?? resolved, path, 'keys must be plain words, not lists, mappings or empty')
        continue
      }
      own.set(String(keyNode.value), { keyNode, value })
    }
    // Explicit keys win over merged ones; earlier merge sources win over later ones.
    for (const source of merged) {
      for (const [key, entry] of source) if (!own.has(key)) own.set(key, entry)
    }
    return own
  }

  #mergeSources(value: Node, path: string, depth: number): Array<Map<string, MapEntry>> {
    const resolved = this.resolve(value)
    const sources = isSeq(resolved) ? resolved.items.map((i) => i as Node) : [value]
    const out: Array<Map<string, MapEntry>> = []
    for (const source of sources) {
      const entries = this.#mapEntries(source, `${path}.<<`, depth + 1)
      if (entries !== undefined) out.push(entries)
    }
    return out
  }

  /** A free-form mapping (user claims, inline JWK) as a plain object. */
  plainMap(node: Node, path: string): Record<string, unknown> | undefined {
    const resolved = this.resolve(node)
    if (!isMap(resolved)) {
      this.problem(resolved ?? node, path, `expected a mapping (\`key: value\` lines), got ${kindOf(resolved)}`)
      return undefined
    }
    return this.plain(resolved, path) as Record<string, unknown>
  }

  /**
   * Free-form data (user claims, inline JWKs) as plain JSON values, with
   * `${VAR}` substituted in its strings.
   */
  plain(node: Node, path: string, depth = 0): unknown {
    const resolved = this.resolve(node)
    if (depth > MAX_DEPTH || resolved === undefined) {
      this.problem(node, path, 'nested too deeply')
      return undefined
    }
    if (isSeq(resolved)) return resolved.items.map((item, i) => this.plain(item as Node, itemPath(path, i), depth + 1))
    if (isMap(resolved)) {
      const out: Record<string, unknown> = {}
      for (const e of this.entries(resolved, path) ?? []) out[e.key] = this.plain(e.value, e.path, depth + 1)
      return out
    }
    if (isScalar(resolved)) {
      const value = this.#scalarValue(resolved, path)
      if (value === REPORTED) return undefined
      if (value instanceof Uint8Array || value instanceof Date || typeof value === 'bigint') {
        this.problem(resolved, path, 'only strings, numbers, booleans, lists and mappings are allowed here')
        return undefined
      }
      return value
    }
    return undefined
  }
}
