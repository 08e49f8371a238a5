/**
 * What the store contract's families share: the harness a store is run
 * through, and records and token values as callers mint them.
 */
import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { ManualClock } from '../../../src/clock.js'
import { hashToken } from '../../../src/store/hash.js'
import type { CodeRecord, DeviceRecord, GrantRecord, Store } from '../../../src/store/types.js'

export interface StoreHarness {
  store: Store
  /**
   * Another instance over the same data (Redis: a second connection with its
   * own subscriber; memory: the same object, as there is no other instance).
   */
  peer(): Promise<Store>
  cleanup(): Promise<void>
}

export type MakeStore = (clock: ManualClock) => Promise<StoreHarness>

/** A fresh random token value and its hash, as callers mint them. */
export function token(): { value: string; hash: string } {
  const value = randomBytes(32).toString('base64url')
  return { value, hash: hashToken(value) }
}

export function nowSec(clock: ManualClock): number {
  return Math.floor(clock.now() / 1000)
}

export function codeRecord(clock: ManualClock, ttlSec = 60): CodeRecord {
  return {
    clientId: 'app',
    redirectUri: 'https://app.example/cb',
    effectiveRedirectUri: 'https://app.example/cb',
    codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    codeChallengeMethod: 'S256',
    scope: 'openid orders:read',
    sub: 'alice',
    authTime: nowSec(clock),
    nonce: null,
    resource: null,
    expiresAt: nowSec(clock) + ttlSec,
  }
}

export function grantRecord(clock: ManualClock, ttlSec = 3600): GrantRecord {
  const now = nowSec(clock)
  return {
    grantId: `g-${randomBytes(8).toString('hex')}`,
    clientId: 'app',
    sub: 'alice',
    scope: 'openid offline_access orders:read',
    authTime: now,
    resource: null,
    createdAt: now,
    expiresAt: now + ttlSec,
    maxAccessExp: now + 300,
  }
}

export function deviceRecord(clock: ManualClock, userCode: string, ttlSec = 600): DeviceRecord {
  return {
    clientId: 'tv',
    userCode,
    scope: 'orders:read',
    status: 'pending',
    sub: null,
    authTime: null,
    expiresAt: nowSec(clock) + ttlSec,
    intervalSec: 5,
    lastPollMs: 0,
  }
}

export function userCode(): string {
  const letters = 'BCDFGHJKLMNPQRSTVWXZ'
  return Array.from(randomBytes(8), (b) => letters[b % letters.length]).join('')
}

/** A store on a fresh clock, cleaned up when the subtest ends. */
export type Setup = (tt: Test) => Promise<{ clock: ManualClock; h: StoreHarness; store: Store }>

export function setupOf(makeStore: MakeStore): Setup {
  return async (tt) => {
    const clock = new ManualClock()
    const h = await makeStore(clock)
    tt.teardown(() => h.cleanup())
    return { clock, h, store: h.store }
  }
}
