/**
 * Deep freeze: a Runtime shares its Config with every request, so nothing may
 * change it after validation (a reload builds a new one instead).
 */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child)
  }
  return value
}
