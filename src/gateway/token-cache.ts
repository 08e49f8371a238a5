/**
 * A bounded LRU of validated tokens, so a client that reuses its token for
 * minutes costs one signature check rather than one per request. Keys are
 * built from the token's SHA-256 (never the token itself); every entry has
 * a deadline (the token's `exp` at the latest) and is dropped on the first
 * read after it. What the cache cannot know (revocation) is checked by the
 * caller on every hit.
 */

interface Slot<V> {
  value: V
  /** Epoch ms after which the entry is gone. */
  deadlineMs: number
}

export class TokenCache<V> {
  readonly #max: number
  // A Map iterates in insertion order: re-inserting on a hit makes the first
  // key the least recently used one.
  readonly #slots = new Map<string, Slot<V>>()

  constructor(maxEntries: number) {
    if (!Number.isInteger(maxEntries) || maxEntries < 0) throw new RangeError('maxEntries must be a non-negative integer')
    this.#max = maxEntries
  }

  /** The live value for `key`, or undefined (also when its deadline has passed). */
  get(key: string, nowMs: number): V | undefined {
    const slot = this.#slots.get(key)
    if (slot === undefined) return undefined
    this.#slots.delete(key)
    if (nowMs >= slot.deadlineMs) return undefined
    this.#slots.set(key, slot)
    return slot.value
  }

  /** Store `value` until `deadlineMs`, evicting the least recently used entry when full. */
  set(key: string, value: V, deadlineMs: number, nowMs: number): void {
    if (this.#max === 0 || deadlineMs <= nowMs) return
    this.#slots.delete(key)
    if (this.#slots.size >= this.#max) {
      const oldest = this.#slots.keys().next()
      if (oldest.done !== true) this.#slots.delete(oldest.value)
    }
    this.#slots.set(key, { value, deadlineMs })
  }

  delete(key: string): void {
    this.#slots.delete(key)
  }

  clear(): void {
    this.#slots.clear()
  }

  get size(): number {
    return this.#slots.size
  }
}
