/**
 * The readers of single values (strings, booleans, numbers, durations,
 * sizes) behind Reader's `str()`, `bool()`, `int()`, ... A value whose text
 * came from `${VAR}` stays a string in YAML; these readers parse that text,
 * so `port: ${PORT}` works and `secret: ${SECRET}` never turns into a number.
 */
import type { Node } from 'yaml'
import { formatDurationMs, parseDurationMs } from './duration.js'
import type { Read } from './read.js'
import { parseSizeBytes } from './size.js'
import { kindOf } from './yaml-node.js'

/** Marks a value whose problem is already reported (bad `${VAR}`, wrong node kind). */
export const REPORTED: unique symbol = Symbol('reported')

/** What the value readers ask of the Reader. */
export interface ScalarAccess {
  /** The scalar at `node` (aliases followed, `${VAR}` substituted), or REPORTED after a problem. */
  scalar(node: Node, path: string, expected: string): unknown
  /** True when the text of this value came from `${VAR}` substitution. */
  fromEnv(node: Node): boolean
  /** Records a problem at the value (the alias target when aliased); undefined, for `return`. */
  refuse(node: Node, path: string, message: string): undefined
}

/** A string (non-empty unless `allowEmpty`), optionally checked by `check`. */
export function readStr(a: ScalarAccess, opts: { allowEmpty?: boolean; check?: (value: string) => string | undefined; expected?: string }): Read<string> {
  const expected = opts.expected ?? 'a string'
  return (node, path) => {
    const value = a.scalar(node, path, expected)
    if (value === REPORTED) return undefined
    if (typeof value !== 'string') return a.refuse(node, path, `expected ${expected}, got ${kindOf(undefined, value)}`)
    if (!opts.allowEmpty && value.trim() === '') return a.refuse(node, path, `expected ${expected}, got an empty string`)
    const reason = opts.check?.(value)
    return reason !== undefined ? a.refuse(node, path, reason) : value
  }
}

/** A string or a number (listen addresses accept a bare port). */
export function readStrOrInt(a: ScalarAccess): Read<string | number> {
  return (node, path) => {
    const value = a.scalar(node, path, 'a string')
    if (value === REPORTED) return undefined
    if (typeof value === 'string' && a.fromEnv(node) && /^\d+$/.test(value.trim())) return Number(value.trim())
    if (typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value))) return value
    return a.refuse(node, path, `expected a string, got ${kindOf(undefined, value)}`)
  }
}

export function readBool(a: ScalarAccess): Read<boolean> {
  return (node, path) => {
    const value = a.scalar(node, path, '`true` or `false`')
    if (value === REPORTED) return undefined
    if (typeof value === 'boolean') return value
    if (typeof value === 'string' && a.fromEnv(node) && /^(?:true|false)$/i.test(value.trim())) return value.trim().toLowerCase() === 'true'
    const hint = typeof value === 'string' && /^(?:yes|no|on|off|y|n)$/i.test(value) ? ' (YAML 1.2: yes/no/on/off are strings)' : ''
    return a.refuse(node, path, `expected \`true\` or \`false\`, got ${kindOf(undefined, value)}${hint}`)
  }
}

export function readInt(a: ScalarAccess, opts: { min?: number; max?: number }): Read<number> {
  return (node, path) => {
    const raw = a.scalar(node, path, 'a whole number')
    if (raw === REPORTED) return undefined
    const value = typeof raw === 'string' && a.fromEnv(node) && /^[-+]?\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw
    if (typeof value !== 'number' || !Number.isSafeInteger(value)) return a.refuse(node, path, `expected a whole number, got ${kindOf(undefined, value)}`)
    if (opts.min !== undefined && value < opts.min) return a.refuse(node, path, `must be at least ${opts.min}, got ${value}`)
    if (opts.max !== undefined && value > opts.max) return a.refuse(node, path, `must be at most ${opts.max}, got ${value}`)
    return value
  }
}

/** A duration in whole `unitName` (`unitMs` each); `min`/`max` are in that unit. */
export function readDuration(a: ScalarAccess, unitMs: number, opts: { min?: number; max?: number }, unitName: string): Read<number> {
  return (node, path) => {
    const value = a.scalar(node, path, 'a duration like `30s`')
    if (value === REPORTED) return undefined
    if (typeof value !== 'string' && typeof value !== 'number') {
      return a.refuse(node, path, `expected a duration like \`30s\`, \`10m\`, \`1h\`, got ${kindOf(undefined, value)}`)
    }
    const parsed = parseDurationMs(value)
    if (!parsed.ok) return a.refuse(node, path, parsed.reason)
    const ms = parsed.value
    if (ms % unitMs !== 0) return a.refuse(node, path, `must be a whole number of ${unitName}, got \`${String(value)}\``)
    const minMs = (opts.min ?? 0) * unitMs
    if (ms < minMs) return a.refuse(node, path, `must be at least ${formatDurationMs(minMs)}, got \`${String(value)}\``)
    if (opts.max !== undefined && ms > opts.max * unitMs) {
      return a.refuse(node, path, `must be at most ${formatDurationMs(opts.max * unitMs)}, got \`${String(value)}\``)
    }
    return ms / unitMs
  }
}

/** A size in bytes (`512kb`, `10mb`, or a number of bytes). */
export function readBytes(a: ScalarAccess, opts: { min?: number }): Read<number> {
  return (node, path) => {
    const value = a.scalar(node, path, 'a size like `10mb`')
    if (value === REPORTED) return undefined
    if (typeof value !== 'string' && typeof value !== 'number') {
      return a.refuse(node, path, `expected a size like \`512kb\` or \`10mb\`, got ${kindOf(undefined, value)}`)
    }
    const parsed = parseSizeBytes(value)
    if (!parsed.ok) return a.refuse(node, path, parsed.reason)
    if (opts.min !== undefined && parsed.value < opts.min) return a.refuse(node, path, `must be at least ${opts.min} bytes`)
    return parsed.value
  }
}
