/**
 * Server-provided DPoP nonces (RFC 9449 8, 9), stateless: the nonce of a
 * time window is an HMAC of the window's number under a configured secret,
 * so every instance sharing the secret issues and accepts the same nonces
 * without the store. The current and the previous window's nonces are
 * accepted, so a nonce handed out just before a window ends still works for
 * one more window; a client learns the next one from `DPoP-Nonce`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Clock } from '../clock.js'

export class DpopNonces {
  readonly #secret: string
  readonly #windowMs: number
  readonly #clock: Clock
  /** The last window computed and its nonce (one HMAC per window, not per request). */
  #window = Number.NaN
  #nonce = ''

  constructor(secret: string, ttlSec: number, clock: Clock) {
    this.#secret = secret
    this.#windowMs = Math.max(1, ttlSec) * 1000
    this.#clock = clock
  }

  #of(window: number): string {
    return createHmac('sha256', this.#secret).update(`bearward dpop nonce ${window}`).digest('base64url')
  }

  /** The nonce to hand out now. */
  current(): string {
    const window = Math.floor(this.#clock.now() / this.#windowMs)
    if (window !== this.#window) {
      this.#window = window
      this.#nonce = this.#of(window)
    }
    return this.#nonce
  }

  /** Whether `nonce` is this window's or the previous one's. */
  accepts(nonce: unknown): boolean {
    if (typeof nonce !== 'string' || nonce.length !== 43) return false
    const given = Buffer.from(nonce)
    const now = this.current()
    if (timingSafeEqual(given, Buffer.from(now))) return true
    return timingSafeEqual(given, Buffer.from(this.#of(this.#window - 1)))
  }
}
