/**
 * "Did you mean" for unknown config keys: a misspelt key is the most common
 * config mistake, and naming the likely intended key makes it a one-second fix.
 */

/** Levenshtein distance (insert, delete, substitute: cost 1 each). */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0
  if (a.length === 0) return b.length
  if (b.length === 0) return a.length
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1)
      current[j] = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution)
    }
    previous = current
  }
  return previous[b.length] ?? 0
}

/**
 * The known key closest to `word` within `maxDistance` edits (ties: the first
 * in `known`), or undefined. Case and `-`/`_` differences count as a match, so
 * `clientId` and `client-id` both suggest `client_id`.
 */
export function suggest(word: string, known: readonly string[], maxDistance = 2): string | undefined {
  const canonical = (s: string): string => s.toLowerCase().replace(/[-_]/g, '')
  const wordCanonical = canonical(word)
  const sameWord = known.find((k) => canonical(k) === wordCanonical)
  if (sameWord !== undefined) return sameWord
  // `warning` → `warn`, `access` → `access_token`: a prefix is a strong hint even when many edits away.
  const lower = word.toLowerCase()
  const prefixed = known.find((k) => Math.min(k.length, lower.length) >= 3 && (k.toLowerCase().startsWith(lower) || lower.startsWith(k.toLowerCase())))
  let best: string | undefined
  let bestDistance = maxDistance + 1
  for (const candidate of known) {
    const d = editDistance(word.toLowerCase(), candidate.toLowerCase())
    if (d < bestDistance) {
      best = candidate
      bestDistance = d
    }
  }
  return best ?? prefixed
}
