import { isScalar, type Node } from 'yaml'
import { childPath } from './key-path.js'
import type { Read } from './read.js'

/** One key of a mapping: the key's node (where problems about the key point) and its value. */
export interface MapEntry {
  keyNode: Node
  value: Node
}

/** What a MapView asks of the reader that made it. */
export interface MapViewReader {
  resolve(node: unknown): Node | undefined
  problem(node: Node | undefined, path: string, message: string): void
}

/** The known keys of one mapping, after merge keys (`<<`) are applied. */
export class MapView {
  readonly node: Node | undefined
  readonly path: string
  readonly #reader: MapViewReader
  readonly #entries: Map<string, MapEntry>

  constructor(reader: MapViewReader, node: Node | undefined, path: string, entries: Map<string, MapEntry>) {
    this.#reader = reader
    this.node = node
    this.path = path
    this.#entries = entries
  }

  has(key: string): boolean {
    return this.#entries.has(key)
  }

  /** The value node of `key`, when present. */
  get(key: string): Node | undefined {
    return this.#entries.get(key)?.value
  }

  /** True when `key` is present with an empty / `null` value. */
  isNull(key: string): boolean {
    const node = this.#reader.resolve(this.get(key))
    return isScalar(node) && node.value === null
  }

  pathOf(key: string): string {
    return childPath(this.path, key)
  }

  /** Optional key: `fallback` when absent (or refused: the problem is recorded). */
  opt<T>(key: string, read: Read<T>, fallback: T): T {
    const node = this.get(key)
    if (node === undefined) return fallback
    return read(node, this.pathOf(key)) ?? fallback
  }

  /** Optional key without a default. */
  maybe<T>(key: string, read: Read<T>): T | undefined {
    const node = this.get(key)
    return node === undefined ? undefined : read(node, this.pathOf(key))
  }

  /** Required key: a problem at the mapping when absent. */
  req<T>(key: string, read: Read<T>, hint = ''): T | undefined {
    const node = this.get(key)
    if (node === undefined) {
      this.#reader.problem(this.node, this.pathOf(key), `missing required key \`${key}\`${hint}`)
      return undefined
    }
    return read(node, this.pathOf(key))
  }
}
