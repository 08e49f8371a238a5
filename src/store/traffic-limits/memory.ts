/**
 * Traffic limits in memory (one instance). The number of keys is bounded:
 * past `maxKeys`, the key touched longest ago is forgotten, and forgetting
 * a key gives whoever it counted a whole allowance again (docs/traffic.md).
 * A key a client keeps using is touched by each of its requests, so only a
 * flood of more distinct keys than the bound between two of its requests
 * can evict it.
 */
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import { quotaStep, rateStep, type Step } from './gcra.js'
import type { LimitTake, LimitVerdict, TrafficLimitStore } from './types.js'

/** Keys kept at most by default: about 100 bytes each, so some 10 MB. */
export const DEFAULT_MAX_LIMIT_KEYS = 100_000

interface Entry {
  /** A rate limit's TAT, or a quota's count. */
  value: number
  /** When the entry says nothing any more (epoch ms): TAT passed, or the quota's period over. */
  expiresMs: number
}

function storeKey(take: LimitTake): string {
  return take.rule.kind === 'quota' ? `${take.key}\n${take.rule.period}` : take.key
}

export class MemoryTrafficLimits implements TrafficLimitStore, MemoryFamily {
  readonly #s: MemoryScope
  readonly #maxKeys: number
  /** In the order they were last touched: the first is the one to forget. */
  readonly #entries = new Map<string, Entry>()

  constructor(scope: MemoryScope, maxKeys = DEFAULT_MAX_LIMIT_KEYS) {
    this.#s = scope
    this.#maxKeys = maxKeys
  }

  get size(): number {
    return this.#entries.size
  }

  sweep(nowMs: number): void {
    for (const [k, e] of this.#entries) if (nowMs >= e.expiresMs) this.#entries.delete(k)
  }

  async take(takes: readonly LimitTake[]): Promise<LimitVerdict> {
    this.#s.open()
    const now = this.#s.nowMs()
    const steps: Step[] = []
    for (const t of takes) {
      const e = this.#entries.get(storeKey(t))
      const live = e !== undefined && now < e.expiresMs ? e.value : undefined
      steps.push(t.rule.kind === 'rate' ? rateStep(live, now, t.cost, t.rule) : quotaStep(live ?? 0, now, t.cost, t.rule))
    }
    const allowed = steps.every((s) => s.allowed)
    for (const [i, t] of takes.entries()) {
      const key = storeKey(t)
      if (allowed) {
        const step = steps[i] as Step
        this.#put(key, { value: step.next, expiresMs: t.rule.kind === 'rate' ? step.next : t.rule.endMs })
        continue
      }
      // Refused: nothing counted, but the keys are in use. A client kept at
      // its limit must not fall to the end of the queue and be forgotten.
      const e = this.#entries.get(key)
      if (e !== undefined) this.#put(key, e)
    }
    // Refused: a limit that had room reports itself as it stays (nothing was counted).
    return { allowed, states: steps.map((s) => (allowed || !s.allowed ? s.state : s.unchanged)) }
  }

  #put(key: string, entry: Entry): void {
    // Deleted first so the key moves to the end: most recently touched.
    this.#entries.delete(key)
    while (this.#entries.size >= this.#maxKeys) {
      const oldest = this.#entries.keys().next()
      if (oldest.done === true) break
      this.#entries.delete(oldest.value)
    }
    this.#entries.set(key, entry)
  }
}
