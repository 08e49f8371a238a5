/**
 * Traffic limits in memory (one instance). The number of keys is bounded by
 * `maxKeys`, kept as two generations of at most half of it each: a key is
 * written to the young one; when that is full, the old generation is
 * forgotten whole and the young one becomes old; a key found in the old one
 * moves back to the young. So a key touched at least once while maxKeys / 2
 * other keys arrive is never forgotten, every operation is O(1), and
 * forgetting a key gives whoever it counted a whole allowance again
 * (docs/traffic.md).
 *
 * Keys that count a tool name (`key: tool`: text the request body chose,
 * free to invent) live in generations of their own, bounded by
 * `maxNameKeys`: a batch of invented tool names, thousands per request,
 * pushes out only other names, never a client's, person's, grant's or
 * address's count (or quota), which an attacker could otherwise forget on
 * purpose to start its own allowance whole again.
 */
import type { MemoryFamily, MemoryScope } from '../memory/scope.js'
import { quotaStep, rateStep, type Step } from './gcra.js'
import type { LimitTake, LimitVerdict, TrafficLimitStore } from './types.js'

/** Keys kept at most by default: some 330 bytes each, so about 33 MB (bench/scenarios/rate-limit-keys.mjs). */
export const DEFAULT_MAX_LIMIT_KEYS = 100_000

/** Tool-name keys kept at most by default, apart from the others (about 3.3 MB). */
export const DEFAULT_MAX_NAME_KEYS = 10_000

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
  /** Keys of who is counted (client, person, grant, address). */
  readonly #identities: Generations
  /** Keys of tool names (`LimitTake.named`): a flood of invented names cannot push out an identity's. */
  readonly #names: Generations

  constructor(scope: MemoryScope, maxKeys = DEFAULT_MAX_LIMIT_KEYS, maxNameKeys = DEFAULT_MAX_NAME_KEYS) {
    this.#s = scope
    this.#identities = new Generations(maxKeys)
    this.#names = new Generations(maxNameKeys)
  }

  get size(): number {
    return this.#identities.size + this.#names.size
  }

  sweep(nowMs: number): void {
    this.#identities.sweep(nowMs)
    this.#names.sweep(nowMs)
  }

  async take(takes: readonly LimitTake[]): Promise<LimitVerdict> {
    this.#s.open()
    const now = this.#s.nowMs()
    const entries: Entry[] = []
    const steps: Step[] = []
    for (const t of takes) {
      // Found in either generation, the key is now young: it is in use.
      const e = (t.named === true ? this.#names : this.#identities).touch(storeKey(t))
      entries.push(e)
      const live = now < e.expiresMs ? e.value : undefined
      steps.push(t.rule.kind === 'rate' ? rateStep(live, now, t.cost, t.rule) : quotaStep(live ?? 0, now, t.cost, t.rule))
    }
    const allowed = steps.every((s) => s.allowed)
    if (allowed) {
      for (const [i, t] of takes.entries()) {
        const e = entries[i] as Entry
        const step = steps[i] as Step
        e.value = step.next
        e.expiresMs = t.rule.kind === 'rate' ? step.next : t.rule.endMs
      }
    }
    // Refused: a limit that had room reports itself as it stays (nothing was counted).
    return { allowed, states: steps.map((s) => (allowed || !s.allowed ? s.state : s.unchanged)) }
  }
}

/** At most `maxKeys` entries, in two generations of half of it each (see the file's comment). */
class Generations {
  /** Keys per generation: half the bound. */
  readonly #generation: number
  #young = new Map<string, Entry>()
  #old = new Map<string, Entry>()

  constructor(maxKeys: number) {
    this.#generation = Math.max(1, Math.floor(maxKeys / 2))
  }

  get size(): number {
    return this.#young.size + this.#old.size
  }

  sweep(nowMs: number): void {
    for (const map of [this.#young, this.#old]) for (const [k, e] of map) if (nowMs >= e.expiresMs) map.delete(k)
  }

  /** The key's entry in the young generation (an empty one, expired, for a new key). */
  touch(key: string): Entry {
    const young = this.#young.get(key)
    if (young !== undefined) return young
    const entry = this.#old.get(key) ?? { value: 0, expiresMs: 0 }
    this.#old.delete(key)
    if (this.#young.size >= this.#generation) {
      this.#old = this.#young
      this.#young = new Map()
    }
    this.#young.set(key, entry)
    return entry
  }
}
