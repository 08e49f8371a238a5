/**
 * What a primary and its worker processes say to each other over the
 * cluster IPC channel (a socket pair private to the two processes). Every
 * message is checked on arrival: a process trusts its peer's code, not the
 * shape of whatever arrives on the channel.
 */
import type { JWK } from 'jose'

/** The config text the primary read and checked, for every worker to run the same bytes. */
export interface ConfigText {
  text: string
  /** The private key to sign with when the AS has no configured keys (one for all workers); null when not needed. */
  ephemeralJwk: JWK | null
}

export type ToWorker =
  | ({ type: 'start' } & ConfigText)
  | ({ type: 'reload'; seq: number } & ConfigText)
  | { type: 'ask'; seq: number; what: 'metrics' | 'readiness' }
  | { type: 'shutdown' }

export type ToPrimary =
  /** The worker listens for messages (sent once, before anything else). */
  | { type: 'hello' }
  /** The worker serves `listen`; `digest` is the config text's SHA-256. */
  | { type: 'started'; listen: string; digest: string }
  /** The worker could not start; it exits after sending this. */
  | { type: 'start-failed'; message: string }
  | { type: 'reloaded'; seq: number; ok: boolean; digest: string; error: string | null }
  | { type: 'metrics'; seq: number; text: string }
  | { type: 'readiness'; seq: number; ready: boolean; body: Record<string, unknown> }

type Fields = Record<string, unknown>

const isObject = (v: unknown): v is Fields => typeof v === 'object' && v !== null && !Array.isArray(v)
const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v)
const isJwkOrNull = (v: unknown): v is JWK | null => v === null || (isObject(v) && typeof v.kty === 'string')

function isConfigText(m: Fields): boolean {
  return typeof m.text === 'string' && isJwkOrNull(m.ephemeralJwk)
}

/** A message from the primary, or null when it is not one. */
export function toWorker(m: unknown): ToWorker | null {
  if (!isObject(m)) return null
  switch (m.type) {
    case 'start':
      return isConfigText(m) ? (m as unknown as ToWorker) : null
    case 'reload':
      return isSeq(m.seq) && isConfigText(m) ? (m as unknown as ToWorker) : null
    case 'ask':
      return isSeq(m.seq) && (m.what === 'metrics' || m.what === 'readiness') ? (m as unknown as ToWorker) : null
    case 'shutdown':
      return { type: 'shutdown' }
    default:
      return null
  }
}

/** A message from a worker, or null when it is not one. */
export function toPrimary(m: unknown): ToPrimary | null {
  if (!isObject(m)) return null
  switch (m.type) {
    case 'hello':
      return { type: 'hello' }
    case 'started':
      return typeof m.listen === 'string' && typeof m.digest === 'string' ? (m as unknown as ToPrimary) : null
    case 'start-failed':
      return typeof m.message === 'string' ? (m as unknown as ToPrimary) : null
    case 'reloaded':
      return isSeq(m.seq) && typeof m.ok === 'boolean' && typeof m.digest === 'string' && (m.error === null || typeof m.error === 'string')
        ? (m as unknown as ToPrimary)
        : null
    case 'metrics':
      return isSeq(m.seq) && typeof m.text === 'string' ? (m as unknown as ToPrimary) : null
    case 'readiness':
      return isSeq(m.seq) && typeof m.ready === 'boolean' && isObject(m.body) ? (m as unknown as ToPrimary) : null
    default:
      return null
  }
}
