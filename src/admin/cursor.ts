/**
 * List cursors: opaque to callers, HMAC-signed with a key derived from the
 * signing keys (so every instance of a deployment accepts another's), and
 * bound to the list and its filter. A cursor forged, altered, or taken from
 * another list (or the same list with another filter) is 400 invalid_cursor.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { type SealingKey, sealingKey } from '../crypto/sealed.js'
import type { KeySet } from '../keys/keyset.js'
import { AdminProblem } from './problem.js'

/** Longest cursor worth looking at: ours are far shorter. */
const MAX_CURSOR_LENGTH = 2048

export class CursorCodec {
  readonly #keys: readonly SealingKey[]

  /** The first key signs, every key verifies (a key rotation keeps cursors in flight good). */
  constructor(keys: readonly SealingKey[]) {
    if (keys.length === 0) throw new Error('CursorCodec: no keys')
    this.#keys = keys
  }

  static fromKeys(keys: KeySet): CursorCodec {
    return new CursorCodec(keys.all.map((k) => sealingKey(Buffer.from(String(k.privateKey.export({ format: 'jwk' }).d), 'base64url'), 'admin cursor')))
  }

  /** A cursor for `list` (e.g. `clients`, `grants?person=x`) that resumes after `position`. */
  encode(list: string, position: string): string {
    const payload = Buffer.from(JSON.stringify({ l: list, p: position }), 'utf8').toString('base64url')
    return `${payload}.${this.#mac(this.#keys[0] as SealingKey, payload)}`
  }

  /** The position of `cursor` in `list`, or a 400 when it is not one of ours for this very list. */
  decode(list: string, cursor: string): string {
    const invalid = new AdminProblem(400, 'invalid_cursor', 'The cursor is not valid for this list')
    if (cursor.length > MAX_CURSOR_LENGTH) throw invalid
    const [payload, mac, extra] = cursor.split('.')
    if (payload === undefined || mac === undefined || extra !== undefined) throw invalid
    const given = Buffer.from(mac, 'base64url')
    const authentic = this.#keys.some((k) => {
      const want = Buffer.from(this.#mac(k, payload), 'base64url')
      return want.length === given.length && timingSafeEqual(want, given)
    })
    if (!authentic) throw invalid
    const parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { l?: unknown; p?: unknown }
    if (parsed.l !== list || typeof parsed.p !== 'string') throw invalid
    return parsed.p
  }

  #mac(key: SealingKey, payload: string): string {
    return createHmac('sha256', key.key).update(payload).digest('base64url')
  }
}

/** Default and largest page sizes of every list. */
export const DEFAULT_PAGE_SIZE = 50
export const MAX_PAGE_SIZE = 200

/** `limit` of a list request: 1..MAX_PAGE_SIZE, default DEFAULT_PAGE_SIZE. */
export function pageLimit(value: string | null): number {
  if (value === null) return DEFAULT_PAGE_SIZE
  if (!/^[0-9]{1,4}$/.test(value)) throw new AdminProblem(400, 'invalid_request', `limit must be a whole number from 1 to ${MAX_PAGE_SIZE}`)
  const n = Number(value)
  if (n < 1 || n > MAX_PAGE_SIZE) throw new AdminProblem(400, 'invalid_request', `limit must be a whole number from 1 to ${MAX_PAGE_SIZE}`)
  return n
}

/** One page of a list sorted by a unique key: the items after `after`, and whether more follow. */
export function pageOf<T>(sorted: readonly T[], keyOf: (item: T) => string, after: string | null, limit: number): { items: T[]; last: string | null } {
  const start = after === null ? 0 : sorted.findIndex((item) => keyOf(item) > after)
  const from = start < 0 ? sorted.length : start
  const items = sorted.slice(from, from + limit)
  const more = from + limit < sorted.length
  const lastItem = items[items.length - 1]
  return { items, last: more && lastItem !== undefined ? keyOf(lastItem) : null }
}
