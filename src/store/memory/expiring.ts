/** Values with a deadline, judged lazily on read against the injected clock. */

export interface Expiring<T> {
  value: T
  expMs: number
}

/** The value under `key` while `nowMs` is before its deadline; a dead entry is dropped on the way. */
export function live<T>(map: Map<string, Expiring<T>>, key: string, nowMs: number): T | null {
  const e = map.get(key)
  if (!e) return null
  if (nowMs >= e.expMs) {
    map.delete(key)
    return null
  }
  return e.value
}

export function sweepExpiring<T>(map: Map<string, Expiring<T>>, nowMs: number): void {
  for (const [k, e] of map) if (nowMs >= e.expMs) map.delete(k)
}

/** Deep copy, so a caller mutating a returned record cannot change stored state (as with Redis). */
export function copy<T>(value: T): T {
  return structuredClone(value)
}

/** One key for a (sub, client) pair: JSON of the pair is unambiguous whatever characters either holds. */
export function pairKey(sub: string, clientId: string): string {
  return JSON.stringify([sub, clientId])
}
