/**
 * An authorization-server context built from YAML the way users write it:
 * parseConfig (with `${VAR}` from `env`), the embedded MemoryStore on a
 * ManualClock, an ephemeral ES256 key, a silent logger, fresh Metrics and a
 * RevocationList. For tests of any AS endpoint.
 */
import { buildFaceDeps } from '../../src/face-deps.js'
import { buildAsContext as buildFromDeps } from '../../src/as/build.js'
import type { AsContext } from '../../src/as/context.js'
import type { ManualClock } from '../../src/clock.js'
import { parseConfig } from '../../src/config/load.js'
import { generatePrivateJwk, loadKeySet, signingKeyFromJwk } from '../../src/keys/keyset.js'
import { createLogger } from '../../src/log.js'
import { Metrics } from '../../src/metrics.js'
import { MemoryStore } from '../../src/store/memory.js'
import { RevocationList } from '../../src/store/revocation-list.js'

export interface BuiltAs {
  as: AsContext
  store: MemoryStore
  clock: ManualClock
  close(): Promise<void>
}

/**
 * Build an AsContext from config text. Throws ConfigError when the YAML is
 * invalid, or an Error when it has no `authorization_server`.
 *
 * @param env values for `${VAR}` in the YAML (e.g. `PUBLIC_URL` once a server knows its port)
 */
export async function buildAsContext(yaml: string, clock: ManualClock, env: Record<string, string> = {}): Promise<BuiltAs> {
  const config = parseConfig(yaml, '<test>', env)
  const asConfig = config.authorizationServer
  if (asConfig === null) throw new Error('the test config has no authorization_server section')
  const store = new MemoryStore(clock, { sweepIntervalMs: 0 })
  const log = createLogger('silent')
  const keys = await loadKeySet(asConfig.keys, async () => signingKeyFromJwk(await generatePrivateJwk('ES256')))
  const revocations = new RevocationList(store, clock, log, 3600)
  const as = buildFromDeps({ ...buildFaceDeps({ clock, log, store, revocations, metrics: new Metrics() }, config, keys), as: asConfig, keys })
  return {
    as,
    store,
    clock,
    async close() {
      await revocations.stop()
      await store.close()
    },
  }
}
