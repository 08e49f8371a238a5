// The memory of 1,000,000 distinct rate-limit keys on the memory store (issue
// #44: a key explosion, e.g. random client ids or addresses): the store's
// traffic-limit family from dist/, 1,000,000 takes of distinct keys, and the
// heap it holds afterwards (after a full GC). The family keeps at most
// DEFAULT_MAX_LIMIT_KEYS (100,000) keys, forgetting the one touched longest
// ago; the target is that bound and the heap it costs. Runs in the bench's
// own process (no server): it measures a data structure, not a request path.
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { bearwardUnavailable } from '../lib/bearward.mjs'
import { notRun, row } from '../lib/rows.mjs'

const KEYS = 1_000_000
const MB = 1024 * 1024
const TARGET = 'keys held ≤ 100,000; heap held < 64 MB'

function fullGc() {
  setFlagsFromString('--expose-gc')
  runInNewContext('gc')()
}

export default {
  title: 'memory of 1,000,000 distinct rate-limit keys (memory store)',
  target: TARGET,
  async setup() {
    const unavailable = bearwardUnavailable()
    if (unavailable) return { targets: [], evaluate: () => [notRun('bearward', TARGET, unavailable)] }
    const { MemoryTrafficLimits, DEFAULT_MAX_LIMIT_KEYS } = await import('../../dist/store/traffic-limits/memory.js')
    const { MemoryScope } = await import('../../dist/store/memory/scope.js')
    const { rateRule } = await import('../../dist/gateway/limits/plan.js')
    const { ManualClock } = await import('../../dist/clock.js')
    return {
      rounds: 1,
      targets: [
        {
          id: 'keys',
          label: `${KEYS.toLocaleString('en-US')} distinct keys`,
          async measure() {
            const rule = rateRule(100, 60_000, 0)
            fullGc()
            const before = process.memoryUsage().heapUsed
            const limits = new MemoryTrafficLimits(new MemoryScope(new ManualClock()))
            const started = process.hrtime.bigint()
            for (let i = 0; i < KEYS; i++) await limits.take([{ key: `k${i.toString(36).padStart(22, '0')}`, cost: 1, rule }])
            const us = Number(process.hrtime.bigint() - started) / 1000
            fullGc()
            const held = process.memoryUsage().heapUsed - before
            return { keysHeld: limits.size, heldBytes: held, bound: DEFAULT_MAX_LIMIT_KEYS, usPerTake: us / KEYS }
          },
        },
      ],
      evaluate(a) {
        const r = a.keys.rounds[0]
        const text = `${r.keysHeld.toLocaleString('en-US')} keys held (bound ${r.bound.toLocaleString('en-US')}), heap ${(r.heldBytes / MB).toFixed(1)} MB, ${r.usPerTake.toFixed(2)} µs/take`
        return [
          row(a.keys, {
            subject: 'memory store, 1,000,000 distinct keys',
            target: TARGET,
            ratio: text,
            checks: [{ ok: r.keysHeld <= r.bound && r.heldBytes < 64 * MB, what: TARGET }],
          }),
        ]
      },
    }
  },
}
