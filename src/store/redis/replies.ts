/**
 * Reading Redis replies into the types the store hands out, and turning any
 * failure into StoreUnavailableError: a reply of another shape means the
 * server is not the one the store wrote to, which callers treat like an outage.
 */
import { StoreUnavailableError } from '../../errors.js'

/** The subset of a pino logger the store uses. */
export interface StoreLog {
  info(obj: object, msg: string): void
  warn(obj: object, msg: string): void
  error(obj: object, msg: string): void
}

export function unavailable(err: unknown): StoreUnavailableError {
  if (err instanceof StoreUnavailableError) return err
  return new StoreUnavailableError('store unavailable', { cause: err })
}

/** A message that is safe to log: no URL (it may carry a password), no values. */
export function describe(err: unknown): { code?: string; message: string } {
  if (!(err instanceof Error)) return { message: 'unknown error' }
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' ? { code, message: err.message } : { message: err.message }
}

export function str(v: unknown): string {
  if (typeof v === 'string') return v
  if (typeof v === 'number') return String(v)
  if (Buffer.isBuffer(v)) return v.toString('utf8')
  throw new StoreUnavailableError('unexpected reply from store')
}

export function num(v: unknown): number {
  const n = Number(str(v))
  if (!Number.isFinite(n)) throw new StoreUnavailableError('unexpected reply from store')
  return n
}

export function list(v: unknown): unknown[] {
  if (!Array.isArray(v)) throw new StoreUnavailableError('unexpected reply from store')
  return v as unknown[]
}

export function pairs(flat: unknown[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (let i = 0; i + 1 < flat.length; i += 2) out[str(flat[i])] = str(flat[i + 1])
  return out
}
