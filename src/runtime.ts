import type { Config } from './config/validated-config.js'
import type { Face, GatewayFace, Shared } from './context.js'
import { buildFaceDeps } from './face-deps.js'
import { loadKeySet, generatePrivateJwk, signingKeyFromJwk, type KeySet, type SigningKey } from './keys/keyset.js'
import { buildAsContext } from './as/build.js'
import { overlapsWithStore } from './as/people/directory.js'
import { clientsShadowingStore } from './as/admin-managed-client.js'
import { ConfigError, StoreUnavailableError } from './errors.js'
import type { AsContext } from './as/context.js'
import { createAuthorizationServer } from './as/server.js'
import { createGateway } from './gateway/gateway.js'
import { JwksRegistry, type JwksStage } from './gateway/jwks-client.js'
import { SignalsReceiverFace } from './signals/build.js'
import { asAccessEnder } from './signals/as-access.js'
import type { JWK } from 'jose'
import { UpstreamTargets } from './gateway/upstream/targets.js'

/**
 * What outlives a reload besides `Shared`: the ephemeral signing key (so a
 * reload does not invalidate tokens) and the remote JWKS caches.
 */
export class ProcessState {
  #ephemeral: Promise<SigningKey> | null = null
  readonly #ephemeralSource: () => Promise<JWK>
  readonly jwks: JwksRegistry
  /** Upstream pool targets (connections, health, checkers), kept across reloads for unchanged targets. */
  readonly upstreamTargets: UpstreamTargets
  readonly #log: Pick<Shared, 'log'>['log']
  /** Warnings a build gave already: a reload rebuilds the Runtime but does not repeat them. */
  readonly #warned = new Set<string>()

  /**
   * `ephemeralSource` makes the key when the AS has none configured: by
   * default a new one; worker processes get their primary's, so all of
   * them sign with one key (src/workers/).
   */
  constructor(
    shared: Pick<Shared, 'clock' | 'log'> & Partial<Pick<Shared, 'tracing' | 'metrics'>>,
    ephemeralSource: () => Promise<JWK> = () => generatePrivateJwk('RS256'),
  ) {
    this.jwks = new JwksRegistry(shared.clock, shared.log, shared.tracing ?? null)
    this.upstreamTargets = new UpstreamTargets({ clock: shared.clock, log: shared.log, metrics: shared.metrics ?? null })
    this.#ephemeralSource = ephemeralSource
    this.#log = shared.log
  }

  /** Log `message` as a warning unless an earlier build of this process did (issue #42: a reload repeats no warning). */
  warnOnce(message: string): void {
    if (this.#warned.has(message)) return
    this.#warned.add(message)
    this.#log.warn(message)
  }

  ephemeralKey(): Promise<SigningKey> {
    this.#ephemeral ??= this.#ephemeralSource().then(signingKeyFromJwk)
    // A failed source is tried again by the next build, not remembered.
    this.#ephemeral.catch(() => {
      this.#ephemeral = null
    })
    return this.#ephemeral
  }

  async close(): Promise<void> {
    await this.jwks.close()
  }
}

/**
 * Everything built from one Config. Immutable once built; a reload builds a
 * new one and swaps it in, and a request keeps the Runtime it started with.
 *
 * Building is all or nothing: it touches nothing a running Runtime uses.
 * What it needs from process-wide state (JWKS clients) is staged and applied
 * by `commit()`, which the app calls when it swaps this Runtime in; a build
 * that throws closes what it opened (upstream and introspection pools, JWKS
 * clients it created) before rethrowing.
 */
export class Runtime {
  readonly config: Config
  readonly keys: KeySet | null
  readonly as: Face | null
  /** What the authorization server face was built from (null without one): its clients, keys and settings as served. */
  readonly asContext: AsContext | null
  readonly gateway: GatewayFace
  readonly #jwks: JwksStage
  /** The Shared Signals receiver (`signals`); its pollers start at commit. */
  readonly #signals: SignalsReceiverFace | null
  #inflight = 0
  #drained: (() => void) | null = null

  private constructor(
    config: Config,
    keys: KeySet | null,
    asContext: AsContext | null,
    as: Face | null,
    gateway: GatewayFace,
    jwks: JwksStage,
    signals: SignalsReceiverFace | null,
  ) {
    this.#signals = signals
    this.config = config
    this.keys = keys
    this.asContext = asContext
    this.as = as
    this.gateway = gateway
    this.#jwks = jwks
  }

  static async build(config: Config, shared: Shared, state: ProcessState): Promise<Runtime> {
    const jwks = state.jwks.stage()
    let as: Face | null = null
    try {
      const asConfig = config.authorizationServer
      const keys = asConfig ? await loadKeySet(asConfig.keys, () => state.ephemeralKey()) : null
      // An ephemeral key is reported by the config's warnings (logged at load).
      if (keys && keys.idToken.alg !== 'RS256') {
        state.warnOnce(
          `no RS256 key: ID tokens are signed with ${keys.idToken.alg}, but OpenID Connect clients that do not read discovery expect RS256; add one with \`bearward keys generate --alg RS256\``,
        )
      }
      const deps = buildFaceDeps(shared, config, keys)
      const asContext = asConfig && keys ? buildAsContext({ ...deps, as: asConfig, keys }) : null
      const signals =
        asContext !== null && config.signals !== null
          ? new SignalsReceiverFace(config.signals, {
              clock: shared.clock,
              log: shared.log,
              metrics: deps.metrics,
              store: deps.store,
              jwks,
              clockSkewSec: config.gateway.clockSkewSec,
              providers: asContext.as.identityProviders,
              users: asContext.as.users,
              accessTokenClaims: asContext.as.accessToken.claims,
              ender: asAccessEnder(asContext),
              as: asContext,
            })
          : null
      as = asContext ? createAuthorizationServer(asContext, undefined, signals) : null
      if (asContext && config.adminApi) await refuseShadowedPeople(config, asContext, shared)
      const gateway = createGateway(deps, { jwks, upstreamTargets: state.upstreamTargets })
      return new Runtime(config, keys, asContext, as, gateway, jwks, signals)
    } catch (err) {
      jwks.abort()
      await as?.close().catch(() => undefined)
      throw err
    }
  }

  /** The Shared Signals face (receiver, and transmitter when on); null without `signals`. */
  get signals(): SignalsReceiverFace | null {
    return this.#signals
  }

  /** Apply what the build staged in process-wide state; call once, when this Runtime is swapped in. */
  commit(): void {
    this.#jwks.commit()
    this.#signals?.start()
  }

  /** Release a Runtime that was built but will never serve (a reload refused after the build). */
  async discard(): Promise<void> {
    this.#jwks.abort()
    await this.close()
  }

  /** Count a request in; `depart()` exactly once when it is done. */
  arrive(): void {
    this.#inflight++
  }

  /** Count a request out (see arrive). */
  depart(): void {
    this.#inflight--
    if (this.#inflight === 0 && this.#drained) this.#drained()
  }

  /** Count a request in; call the returned function (idempotent) when it is done. */
  enter(): () => void {
    this.arrive()
    let done = false
    return () => {
      if (done) return
      done = true
      this.depart()
    }
  }

  get inflight(): number {
    return this.#inflight
  }

  /** Resolve when no request is in flight, or after `timeoutMs`. */
  drain(timeoutMs: number): Promise<void> {
    if (this.#inflight === 0) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#drained = null
        resolve()
      }, timeoutMs)
      timer.unref()
      this.#drained = () => {
        clearTimeout(timer)
        this.#drained = null
        resolve()
      }
    })
  }

  /** Release per-runtime resources (upstream pools). */
  async close(): Promise<void> {
    await Promise.allSettled([this.gateway.close(), this.as?.close()])
  }
}

/**
 * A YAML user whose username or sub a person created through the admin API
 * holds, or a YAML client whose id a client created there holds, refuses
 * the load (issue #42: never silently shadowed). A store that
 * cannot be asked now does not stop a start: the lookup refuses the
 * ambiguous username at sign-in instead.
 */
async function refuseShadowedPeople(config: Config, as: AsContext, shared: Shared): Promise<void> {
  let overlaps: Array<{ index: number; message: string; path: string }>
  try {
    const people = await overlapsWithStore(as.as.users, as.store.people)
    // Clients likewise: a YAML client is found before a stored one, so it would take its place.
    const clients = await clientsShadowingStore(as.as.clients, as.store.adminClients)
    overlaps = [
      ...people.map((o) => ({ ...o, path: `authorization_server.users[${o.index}]` })),
      ...clients.map((o) => ({ ...o, path: `authorization_server.clients[${o.index}]` })),
    ]
  } catch (err) {
    if (!(err instanceof StoreUnavailableError)) throw err
    shared.log.warn('config: the store did not answer, so YAML users and clients were not checked against those created through the admin API')
    return
  }
  if (overlaps.length === 0) return
  throw new ConfigError(overlaps.map((o) => ({ file: config.file, line: 1, col: 1, path: o.path, message: o.message })))
}
