/**
 * `workers: N | auto`: how many worker processes share `listen`
 * (docs/many-instances.md). 1, the default, is one process and no primary.
 */
import { availableParallelism } from 'node:os'
import { isScalar, type Node } from 'yaml'
import type { Reader } from './reader.js'
import type { StoreConfig } from './validated-config.js'

/** A bound that catches a typo (`workers: 80000`), far above any host's cores. */
export const MAX_WORKERS = 1024

/** What `workers` said: a count, or `auto` (resolved to the host's cores when the config is read). */
export type WorkersSetting = { auto: true } | { auto: false; count: number }

/** Read `workers`; undefined when it was refused (the problem is recorded). */
export function readWorkersSetting(r: Reader, node: Node, path: string): WorkersSetting | undefined {
  const at = r.resolve(node) ?? node
  const expected = `expected a whole number of worker processes (1 to ${MAX_WORKERS}) or \`auto\` (one per core)`
  if (!isScalar(at) || (typeof at.value === 'number' && !Number.isInteger(at.value))) {
    r.problem(at, path, `${expected}, got ${isScalar(at) ? String(at.value) : 'a mapping or list'}`)
    return undefined
  }
  const value = r.strOrInt()(node, path)
  if (value === undefined) return undefined
  if (typeof value === 'string') {
    if (value.trim() === 'auto') return { auto: true }
    r.problem(at, path, `${expected}, got \`${value}\``)
    return undefined
  }
  if (value < 1 || value > MAX_WORKERS) {
    r.problem(at, path, `${expected}, got ${value}`)
    return undefined
  }
  return { auto: false, count: value }
}

/** The number of worker processes a setting means on this host. */
export function resolveWorkers(setting: WorkersSetting): number {
  return setting.auto ? availableParallelism() : setting.count
}

/**
 * Why a setting cannot run on a store, or undefined when it can. `auto`
 * is refused with `memory` whatever the host: a config's validity must not
 * depend on the machine that checks it.
 */
export function workersStoreConflict(setting: WorkersSetting, store: StoreConfig): string | undefined {
  if (store.kind !== 'memory' || (!setting.auto && setting.count === 1)) return undefined
  return (
    'more than one worker process needs a shared store: with `store: memory` each worker would keep its own ' +
    'authorization codes, sessions, refresh-token families and revocations, so state would be split between ' +
    'processes (a code issued by one is unknown to the next, a revocation reaches one worker only); ' +
    'use a Redis store (`store: redis://…`) or `workers: 1`'
  )
}
