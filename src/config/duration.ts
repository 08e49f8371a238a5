/**
 * Durations in the config: `500ms`, `30s`, `10m`, `1h`, `30d`, or a plain
 * integer meaning seconds. One unit per value keeps them unambiguous.
 */

const UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
}

const DURATION = /^(\d+)(ms|s|m|h|d)?$/

export type ParseResult<T> = { ok: true; value: T } | { ok: false; reason: string }

/** Parse a duration to milliseconds. */
export function parseDurationMs(input: string | number): ParseResult<number> {
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input) || input < 0) {
      return { ok: false, reason: 'a duration must be a whole, non-negative number of seconds or a string like `30s`, `10m`, `1h`' }
    }
    return checkedMs(input * 1000)
  }
  const match = DURATION.exec(input.trim())
  if (match === null) {
    return { ok: false, reason: `\`${input}\` is not a duration; write a number and one unit, e.g. \`500ms\`, \`30s\`, \`10m\`, \`1h\`, \`30d\`` }
  }
  const amount = Number(match[1])
  return checkedMs(amount * (UNIT_MS[match[2] ?? 's'] ?? 1000))
}

function checkedMs(ms: number): ParseResult<number> {
  if (!Number.isSafeInteger(ms)) return { ok: false, reason: 'the duration is too large' }
  return { ok: true, value: ms }
}

/** Human form of a millisecond amount, for messages (`90000` → `90s`). */
export function formatDurationMs(ms: number): string {
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const size = UNIT_MS[unit] ?? 1
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`
  }
  return `${ms}ms`
}
