/** Duplicate detection for ids that must be unique (client_id, route name, ...). */
import type { Node } from 'yaml'
import type { Reader } from './reader.js'

export class UniqueSet {
  readonly #reader: Reader
  readonly #what: string
  readonly #seen = new Map<string, Node | undefined>()

  constructor(reader: Reader, what: string) {
    this.#reader = reader
    this.#what = what
  }

  /** Records `value`; a problem at `node` when it was seen before. Returns true when new. */
  add(value: string, node: Node | undefined, path: string): boolean {
    if (this.#seen.has(value)) {
      const first = this.#seen.get(value)
      this.#reader.problem(node, path, `duplicate ${this.#what} \`${value}\` (first defined at ${this.#reader.lineOf(first)})`)
      return false
    }
    this.#seen.set(value, node)
    return true
  }
}
