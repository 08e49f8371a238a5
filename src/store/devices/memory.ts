/** Device authorization (RFC 8628) in memory. */
import { copy, type Expiring, live, sweepExpiring } from '../memory/expiring.js'
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import type { DeviceDecision, DeviceRecord, DeviceStore, PollResult } from './types.js'

export class MemoryDevices implements DeviceStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #devices = new Map<string, DeviceRecord>()
  /** Normalized user code → device-code hash. */
  readonly #userCodes = new Map<string, Expiring<string>>()

  constructor(scope: MemoryScope) {
    this.#s = scope
  }

  get size(): number {
    return this.#devices.size + this.#userCodes.size
  }

  sweep(nowMs: number): void {
    for (const [k, r] of this.#devices) if (nowMs >= r.expiresAt * 1000) this.#devices.delete(k)
    sweepExpiring(this.#userCodes, nowMs)
  }

  async put(deviceHash: string, record: DeviceRecord): Promise<boolean> {
    this.#s.open()
    if (live(this.#userCodes, record.userCode, this.#s.nowMs())) return false
    this.#userCodes.set(record.userCode, { value: deviceHash, expMs: record.expiresAt * 1000 })
    this.#devices.set(deviceHash, copy(record))
    return true
  }

  async getByUserCode(userCode: string): Promise<{ deviceHash: string; record: DeviceRecord } | null> {
    this.#s.open()
    const deviceHash = live(this.#userCodes, userCode, this.#s.nowMs())
    const record = deviceHash === null ? null : this.#live(deviceHash)
    return deviceHash !== null && record ? { deviceHash, record: copy(record) } : null
  }

  async decide(userCode: string, decision: DeviceDecision): Promise<boolean> {
    this.#s.open()
    const deviceHash = live(this.#userCodes, userCode, this.#s.nowMs())
    const r = deviceHash === null ? null : this.#live(deviceHash)
    if (r?.status !== 'pending') return false
    if (decision.approved) {
      r.status = 'approved'
      r.sub = decision.sub
      r.authTime = decision.authTime
      if (decision.amr !== undefined) r.amr = [...decision.amr]
      if (decision.acr !== undefined) r.acr = decision.acr
      r.decidedAtMs = this.#s.nowMs()
    } else {
      r.status = 'denied'
    }
    return true
  }

  async poll(deviceHash: string, nowMs: number): Promise<PollResult> {
    this.#s.open()
    const r = this.#live(deviceHash)
    if (!r || r.status === 'consumed') return { status: 'missing' }
    const tooSoon = r.lastPollMs > 0 && nowMs - r.lastPollMs < r.intervalSec * 1000
    r.lastPollMs = nowMs
    if (tooSoon) {
      r.intervalSec += 5 // RFC 8628 3.5
      return { status: 'slow_down', record: copy(r) }
    }
    if (r.status === 'approved') {
      r.status = 'consumed'
      return { status: 'approved', record: copy(r) }
    }
    return { status: r.status, record: copy(r) }
  }

  #live(deviceHash: string): DeviceRecord | null {
    const r = this.#devices.get(deviceHash)
    if (!r) return null
    if (this.#s.nowMs() >= r.expiresAt * 1000) {
      this.#devices.delete(deviceHash)
      return null
    }
    return r
  }
}
