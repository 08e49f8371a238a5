/**
 * Byte sizes in the config (`max_body`): `512kb`, `10mb`, `1gb` (binary
 * multiples, so `10mb` is 10 MiB), `100b`, or a plain integer of bytes.
 */
import type { ParseResult } from './duration.js'

const UNIT_BYTES: Readonly<Record<string, number>> = {
  b: 1,
  kb: 1024,
  kib: 1024,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
}

const SIZE = /^(\d+)\s*([a-z]+)?$/

/** Parse a size to bytes. */
export function parseSizeBytes(input: string | number): ParseResult<number> {
  if (typeof input === 'number') {
    if (!Number.isSafeInteger(input) || input < 0) {
      return { ok: false, reason: 'a size must be a whole, non-negative number of bytes or a string like `512kb`, `10mb`' }
    }
    return { ok: true, value: input }
  }
  const match = SIZE.exec(input.trim().toLowerCase())
  const multiplier = match === null ? undefined : UNIT_BYTES[match[2] ?? 'b']
  if (match === null || multiplier === undefined) {
    return { ok: false, reason: `\`${input}\` is not a size; write e.g. \`512kb\`, \`10mb\`, \`1gb\` or a number of bytes` }
  }
  const bytes = Number(match[1]) * multiplier
  if (!Number.isSafeInteger(bytes)) return { ok: false, reason: 'the size is too large' }
  return { ok: true, value: bytes }
}
