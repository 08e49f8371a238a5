/**
 * A bounded cache of validated tokens, so a client that reuses its token for
 * minutes costs one signature check rather than one per request. Callers
 * choose the key: the token itself where only validated tokens are kept and
 * their number is small, its SHA-256 otherwise (docs/performance.md). Every
 * entry has a deadline (the token's `exp` at the latest) and is dropped on
 * the first read after it. What the cache cannot know (revocation) is
 * checked by the caller on every hit.
 *
 * Eviction is "second chance" (CLOCK), an approximation of LRU: a hit only
 * marks its entry as used, and a full cache passes over used entries (moving
 * them back, unmarked) before it evicts one that was not read since its last
 * pass. A hit is then one Map lookup instead of a delete and a re-insert,
 * which matters at proxy speed; an entry still in use is never the one to go.
 */

/**
 * Characters of a key the Map hashes. V8 hashes a string over its whole
 * length, and a JWT runs to hundreds of characters: hashing the tail alone (a JWT's tail is its signature, random to anyone without the
 * key) and comparing the whole key on a hit is much cheaper. Keys that share
 * a tail only displace each other; a hit always compares the whole key.
 */
const HASHED_TAIL = 32

function mapKey(key: string): string {
  return key.length > 2 * HASHED_TAIL ? key.slice(-HASHED_TAIL) : key
}

interface Slot<V> {
  /** The whole key; the Map is keyed by its tail. */
  key: string
  value: V
  /** Epoch ms after which the entry is gone. */
  deadlineMs: number
  /** Read since it was last inserted or passed over. */
  used: boolean
}

export class TokenCache<V> {
  readonly #max: number
  // A Map iterates in insertion order: the first key is the oldest insertion.
  readonly #slots = new Map<string, Slot<V>>()

  constructor(maxEntries: number) {
    if (!Number.isInteger(maxEntries) || maxEntries < 0) throw new RangeError('maxEntries must be a non-negative integer')
    this.#max = maxEntries
  }

  /** The live value for `key`, or undefined (also when its deadline has passed). */
  get(key: string, nowMs: number): V | undefined {
    const tail = mapKey(key)
    const slot = this.#slots.get(tail)
    if (slot === undefined || slot.key !== key) return undefined
    if (nowMs >= slot.deadlineMs) {
      this.#slots.delete(tail)
      return undefined
    }
    slot.used = true
    return slot.value
  }

  /** Store `value` until `deadlineMs`, evicting an entry not read lately when full. */
  set(key: string, value: V, deadlineMs: number, nowMs: number): void {
    if (this.#max === 0 || deadlineMs <= nowMs) return
    const tail = mapKey(key)
    const existing = this.#slots.get(tail)
    if (existing !== undefined) {
      existing.key = key
      existing.value = value
      existing.deadlineMs = deadlineMs
      existing.used = true
      return
    }
    if (this.#slots.size >= this.#max) this.#evictOne(nowMs)
    this.#slots.set(tail, { key, value, deadlineMs, used: false })
  }

  /**
   * Remove one entry: the oldest expired or unused one. Each used entry
   * passed over is unmarked and moved back, so this ends within one pass
   * over the cache (amortized O(1) per insertion).
   */
  #evictOne(nowMs: number): void {
    for (const [key, slot] of this.#slots) {
      this.#slots.delete(key)
      if (slot.used && nowMs < slot.deadlineMs) {
        slot.used = false
        this.#slots.set(key, slot)
        continue
      }
      return
    }
  }

  delete(key: string): void {
    const tail = mapKey(key)
    if (this.#slots.get(tail)?.key === key) this.#slots.delete(tail)
  }

  clear(): void {
    this.#slots.clear()
  }

  get size(): number {
    return this.#slots.size
  }
}
