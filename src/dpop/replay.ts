/**
 * The proof replay cache (RFC 9449 11.1): a proof's `jti` is remembered in
 * the store (so every instance sharing it refuses a replay) for as long as
 * the proof could still be accepted, and a second use is refused.
 */
import type { Store } from '../store/types.js'

/** `jti` is client-chosen; past this length a proof is refused rather than stored. */
export const MAX_JTI_LENGTH = 256

/**
 * Record the proof `jti` of key `jkt`; false when it was seen already.
 * Keyed by the key's thumbprint as well, so two clients that happen to pick
 * the same `jti` do not collide. Rejects with StoreUnavailableError when the
 * store cannot answer (callers fail closed).
 */
export function firstUse(store: Pick<Store, 'singleUse'>, jkt: string, jti: string, ttlSec: number): Promise<boolean> {
  return store.singleUse.use(`dpop:${jkt}:${jti}`, Math.max(1, ttlSec))
}
