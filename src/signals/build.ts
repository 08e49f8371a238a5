/**
 * The Shared Signals receiver of one Runtime: a verifier over the configured
 * transmitters (keys from the process's JWKS registry, kept across
 * reloads), the receiver, the push endpoint's handler and one poller per
 * poll transmitter. Pollers start when the Runtime is swapped in (`start`)
 * and stop with it (`close`), so a refused reload never polls.
 */
import type { Clock } from '../clock.js'
import type { IdentityProviderConfig, SignalsConfig, UserConfig } from '../config/validated-config.js'
import { TRANSMITTER_JWKS } from '../config/sections/signals.js'
import type { JwksSource } from '../gateway/jwks-client.js'
import type { Logger } from '../log.js'
import type { Metrics } from '../metrics.js'
import type { Store } from '../store/types.js'
import type { AsContext } from '../as/context.js'
import type { AccessEnder } from './access.js'
import { SignalsTransmitter } from './transmitter/transmitter.js'
import { SignalPoller } from './poller.js'
import { pushEndpoint } from './push-endpoint.js'
import { SET_JTI_TTL_SEC, SignalReceiver } from './receiver.js'
import { SubjectMapper } from './subjects.js'
import { SetVerifier } from './verify-set.js'

export interface SignalsDeps {
  clock: Clock
  log: Logger
  metrics: Metrics
  store: Pick<Store, 'singleUse' | 'signals' | 'upstream'>
  jwks: JwksSource
  clockSkewSec: number
  providers: readonly IdentityProviderConfig[]
  users: readonly UserConfig[]
  accessTokenClaims: readonly string[]
  ender: AccessEnder
  /** The authorization server whose events the transmitter tells (needed by `signals.transmitter`). */
  as?: AsContext
}

export class SignalsReceiverFace {
  readonly receiver: SignalReceiver
  /** The handler of `POST /signals/events`; null when no transmitter pushes. */
  readonly push: ReturnType<typeof pushEndpoint> | null
  readonly pollers: readonly SignalPoller[]
  /** bearward's own transmitter (`signals.transmitter`); null when off. */
  readonly transmitter: SignalsTransmitter | null

  constructor(config: SignalsConfig, deps: SignalsDeps) {
    const log = deps.log.child({ component: 'signals' })
    const verifier = new SetVerifier(
      config.transmitters.map((t) => ({
        config: t,
        keys: deps.jwks.client({
          id: `signals:${t.issuer}`,
          issuer: t.issuer,
          jwksUri: t.jwksUri,
          algorithms: t.algorithms,
          introspection: null,
          jwks: { ...TRANSMITTER_JWKS },
        }),
      })),
      { clock: deps.clock, clockSkewSec: deps.clockSkewSec, maxAgeSec: SET_JTI_TTL_SEC },
    )
    this.receiver = new SignalReceiver(verifier, {
      clock: deps.clock,
      log,
      metrics: deps.metrics,
      store: deps.store,
      ender: deps.ender,
      subjects: new SubjectMapper(deps.providers, deps.users),
      knownPerson: async (sub) => deps.users.some((u) => u.sub === sub) || (await deps.store.upstream.getPerson(sub)) !== null,
      providers: deps.providers,
      accessTokenClaims: deps.accessTokenClaims,
    })
    this.push = config.transmitters.some((t) => t.delivery === 'push') ? pushEndpoint(this.receiver) : null
    this.pollers = config.transmitters
      .filter((t) => t.delivery === 'poll')
      .map((t) => new SignalPoller(t, { log, metrics: deps.metrics, store: deps.store, receiver: this.receiver }))
    this.transmitter = config.transmitter !== null && deps.as !== undefined ? new SignalsTransmitter(deps.as, config.transmitter) : null
  }

  /** Start polling (the Runtime was swapped in). */
  start(): void {
    for (const p of this.pollers) p.start()
    this.transmitter?.start()
  }

  async close(): Promise<void> {
    await Promise.all([...this.pollers.map((p) => p.close()), this.transmitter?.close()])
  }
}
