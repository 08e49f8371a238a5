/**
 * Decoding upstream response header bytes to the strings `res.writeHead`
 * takes, without paying for a native call per name and value.
 *
 * Every response repeats a handful of names (Content-Type, Date, ...) and
 * many of their values. `Buffer#toString('latin1')` costs a call into C++
 * each time, about as much as the rest of the header handling together
 * (docs/performance.md). These tables remember the last text decoded for
 * each byte sequence: a hit hashes and compares the bytes in JavaScript and
 * returns the string already made. A hit is always an exact byte match, so
 * what reaches the client is what a fresh decode would give.
 *
 * The tables are direct-mapped and fixed in size: a new entry replaces
 * whatever shared its slot, so any mix of headers costs bounded memory, and
 * a flood of distinct values only means misses. Values are remembered only
 * for headers on an allow-list of descriptive ones; Set-Cookie and anything
 * else that may carry a credential is always decoded afresh and never kept.
 */

/** What the proxy does with a response header, decided once per distinct name. */
export interface ResponseHeaderName {
  /** The name as the upstream sent it (case kept). */
  readonly text: string
  /** Lower-cased, for comparisons. */
  readonly lower: string
  /** Its value may be remembered (the name is on VALUE_CACHE_NAMES). */
  readonly cacheValue: boolean
}

/** Names and values longer than this are decoded directly, never remembered. */
const MAX_CACHED_BYTES = 64
const NAME_SLOTS = 256
const VALUE_SLOTS = 512

/**
 * Headers whose values describe the representation or the server and
 * repeat across responses; nothing here identifies a user or a session.
 */
const VALUE_CACHE_NAMES: ReadonlySet<string> = new Set([
  'accept-ranges',
  'access-control-allow-origin',
  'age',
  'cache-control',
  'connection',
  'content-encoding',
  'content-language',
  'content-length',
  'content-type',
  'date',
  'expires',
  'keep-alive',
  'last-modified',
  'server',
  'strict-transport-security',
  'vary',
  'x-content-type-options',
])

/** 31-multiplier string hash over the bytes, folded to a slot index. */
function slotOf(bytes: Uint8Array, mask: number): number {
  let h = bytes.length
  for (let i = 0; i < bytes.length; i++) h = (Math.imul(h, 31) + (bytes[i] as number)) | 0
  return (h ^ (h >>> 11)) & mask
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** A fixed-size, direct-mapped table from byte sequences to values derived from them. */
class ByteTable<T> {
  readonly #keys: (Uint8Array | null)[]
  readonly #values: (T | null)[]
  readonly #mask: number

  constructor(slots: number) {
    this.#keys = new Array<Uint8Array | null>(slots).fill(null)
    this.#values = new Array<T | null>(slots).fill(null)
    this.#mask = slots - 1
  }

  /** The value remembered for exactly these bytes, else `make(bytes)` (remembered when short enough). */
  get(bytes: Buffer, make: (bytes: Buffer) => T): T {
    if (bytes.length > MAX_CACHED_BYTES) return make(bytes)
    const slot = slotOf(bytes, this.#mask)
    const key = this.#keys[slot]
    if (key !== null && key !== undefined && sameBytes(key, bytes)) return this.#values[slot] as T
    const value = make(bytes)
    // A copy: undici's header buffers are views into its socket read buffer.
    this.#keys[slot] = Uint8Array.prototype.slice.call(bytes)
    this.#values[slot] = value
    return value
  }
}

function describeName(text: string): ResponseHeaderName {
  const lower = text.toLowerCase()
  return { text, lower, cacheValue: VALUE_CACHE_NAMES.has(lower) }
}

const decodeLatin1 = (bytes: Buffer): string => bytes.toString('latin1')
const describeBytes = (bytes: Buffer): ResponseHeaderName => describeName(bytes.toString('latin1'))

const names = new ByteTable<ResponseHeaderName>(NAME_SLOTS)
const values = new ByteTable<string>(VALUE_SLOTS)

/** The name of a raw response header (bytes as undici gives them, or a string). */
export function responseHeaderName(raw: Buffer | string): ResponseHeaderName {
  return typeof raw === 'string' ? describeName(raw) : names.get(raw, describeBytes)
}

/**
 * The value of a raw response header as latin1 text (the encoding node:http
 * writes header strings in, so every byte reaches the client unchanged).
 */
export function responseHeaderValue(name: ResponseHeaderName, raw: Buffer | string): string {
  if (typeof raw === 'string') return raw
  return name.cacheValue ? values.get(raw, decodeLatin1) : raw.toString('latin1')
}
