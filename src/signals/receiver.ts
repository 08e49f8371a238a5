/**
 * The Shared Signals receiver: a verified SET (verify-set.ts) becomes
 * actions on bearward's sessions and grants (events.ts, subjects.ts), once
 * per `jti`, each audited as a log line and counted. Push (push-endpoint.ts)
 * and poll (poller.ts) deliveries both come through `receive`.
 */
import type { Clock } from '../clock.js'
import type { IdentityProviderConfig, SignalTransmitterConfig } from '../config/validated-config.js'
import type { Logger } from '../log.js'
import type { Metrics } from '../metrics.js'
import { hashToken } from '../store/hash.js'
import type { SessionRecord, SignalStore, SingleUseStore } from '../store/types.js'
import { OWN_ACR_VALUES } from '../tokens/acr.js'
import type { AccessEnder } from './access.js'
import { actionFor, type AssuranceLevel, EVENT, type SignalAction } from './events.js'
import { SubjectMapper, type SignalSubject } from './subjects.js'
import { grantsCarrying } from './token-claims.js'
import type { SetDelivery, SetVerifier, VerifiedSet } from './verify-set.js'

/** How long a SET's jti is remembered; an older SET is refused (verify-set.ts), so none is acted on twice. */
export const SET_JTI_TTL_SEC = 7 * 86_400
/** At most one log line per transmitter per this long about SETs naming nobody bearward knows (a flood is counted, not logged line by line). */
const UNKNOWN_LOG_EVERY_MS = 60_000

/** What became of one SET that verified. */
export type ReceiveOutcome = 'acted' | 'replayed' | 'unknown-subject' | 'ignored'

export interface ReceiverDeps {
  clock: Clock
  log: Logger
  metrics: Pick<Metrics, 'signalsReceived' | 'signalActions'>
  store: { singleUse: SingleUseStore; signals: SignalStore }
  ender: AccessEnder
  subjects: SubjectMapper
  providers: readonly IdentityProviderConfig[]
  /**
   * Whether bearward knows the person `sub` (a configured user, or someone who signed in through a
   * provider and whose record is kept): an event about anyone else has nothing to end.
   */
  knownPerson(sub: string): Promise<boolean>
  /** `authorization_server.access_token.claims`: the claims our access tokens carry (token-claims-change). */
  accessTokenClaims: readonly string[]
}

/** The short name of an event URI for logs and metric labels (a bounded set). */
function eventName(uri: string): string {
  for (const [name, known] of Object.entries(EVENT)) if (known === uri) return name
  return 'other'
}

function levelOf(acr: string | undefined): number {
  return acr === undefined ? -1 : (OWN_ACR_VALUES as readonly string[]).indexOf(acr)
}

/**
 * Sessions "above" `level`: ranked higher than it, or not ranked at all (an
 * acr bearward cannot compare may claim more than the provider now affirms,
 * so it is ended rather than trusted).
 */
function aboveLevel(level: AssuranceLevel): (s: SessionRecord) => boolean {
  const limit = levelOf(level)
  return (s) => {
    const l = levelOf(s.acr)
    return l < 0 || l > limit
  }
}

export class SignalReceiver {
  readonly #verifier: SetVerifier
  readonly #deps: ReceiverDeps
  /** Per transmitter issuer: SETs about unknown subjects since the last log line, and when that was. */
  readonly #unknown = new Map<string, { count: number; loggedAt: number }>()
  readonly #acrByIssuer: ReadonlyMap<string, Readonly<Record<string, AssuranceLevel>>>

  constructor(verifier: SetVerifier, deps: ReceiverDeps) {
    this.#verifier = verifier
    this.#deps = deps
    this.#acrByIssuer = new Map(deps.providers.map((p) => [p.issuer.replace(/\/+$/, ''), p.acrValues]))
  }

  /** Verify and act on one SET. Rejects with SetRefused (verification) or StoreUnavailableError (nothing was remembered; a retry acts). */
  async receive(token: string, via: SetDelivery): Promise<ReceiveOutcome> {
    let set: VerifiedSet
    try {
      set = await this.#verifier.verify(token, via)
    } catch (err) {
      this.#deps.metrics.signalsReceived.inc({ outcome: 'refused' })
      throw err
    }
    const outcome = await this.#act(set)
    this.#deps.metrics.signalsReceived.inc({ outcome })
    return outcome
  }

  async #act(set: VerifiedSet): Promise<ReceiveOutcome> {
    const { log, store, subjects } = this.#deps
    const t = set.transmitter
    const plans: Array<{ uri: string; action: SignalAction; subject: SignalSubject | null; format: string }> = []
    for (const [uri, body] of Object.entries(set.events)) {
      const action = actionFor(uri, body, t.onSignal, this.#acrByIssuer.get(t.issuer.replace(/\/+$/, '')) ?? {})
      const id = SubjectMapper.identifierOf(set.claims, body)
      const subject = action.kind === 'none' ? null : await this.#known(subjects.resolve(id, t), action)
      plans.push({ uri, action, subject, format: SubjectMapper.formatOf(id) })
    }
    const actionable = plans.filter((p) => p.action.kind !== 'none' && p.subject !== null)
    if (actionable.length === 0) {
      const unknown = plans.find((p) => p.action.kind !== 'none')
      if (unknown !== undefined) {
        // Nothing to do twice, so nothing remembered: a flood of these costs no store space.
        this.#noteUnknown(t, eventName(unknown.uri), unknown.format, set.jti)
        return 'unknown-subject'
      }
      log.info(
        {
          audit: 'signal',
          transmitter: t.issuer,
          jti: set.jti,
          events: plans.map((p) => eventName(p.uri)),
          why: plans.map((p) => (p.action.kind === 'none' ? p.action.why : '')),
        },
        'shared signal acknowledged; nothing to do',
      )
      return 'ignored'
    }
    if (!(await store.singleUse.use(`set:${hashToken(`${t.issuer}\n${set.jti}`)}`, SET_JTI_TTL_SEC))) {
      log.info({ audit: 'signal', transmitter: t.issuer, jti: set.jti }, 'shared signal replayed; acknowledged, not acted on again')
      return 'replayed'
    }
    for (const p of actionable) await this.#apply(t, set.jti, p.uri, p.action, p.subject as SignalSubject)
    return 'acted'
  }

  async #apply(t: SignalTransmitterConfig, jti: string, uri: string, action: SignalAction, subject: SignalSubject): Promise<void> {
    const { ender, store, log, metrics } = this.#deps
    const event = eventName(uri)
    const reason = `signal:${event}`
    let sessions = 0
    let grants = 0
    const endAll = async (withGrants: boolean): Promise<void> => {
      if (subject.providerSession !== null) sessions += await ender.endProviderSession(subject.providerSession.provider, subject.providerSession.sid, reason)
      for (const sub of subject.subs) {
        if (subject.providerSession === null) sessions += await ender.endSessions(sub, null, reason)
        if (withGrants) grants += await ender.endGrants(sub, null, reason)
      }
    }
    switch (action.kind) {
      case 'end':
        await endAll(action.grants)
        break
      case 'disable':
        // Refuse first: a sign-in racing the ending must not slip through after it.
        for (const sub of subject.subs) await store.signals.disableAccount(sub)
        await endAll(true)
        break
      case 'enable':
        for (const sub of subject.subs) await store.signals.enableAccount(sub)
        break
      case 'lower-assurance':
        for (const sub of subject.subs) sessions += await ender.endSessions(sub, aboveLevel(action.level), reason)
        break
      case 'claims-changed': {
        const which = grantsCarrying(action.claims, this.#deps.accessTokenClaims)
        for (const sub of subject.subs) grants += await ender.endGrants(sub, which, reason)
        break
      }
      case 'none':
        return
    }
    metrics.signalActions.inc({ event, action: action.kind })
    log.info(
      { audit: 'signal', transmitter: t.issuer, jti, event, action: action.kind, subs: subject.subs, sessions_ended: sessions, grants_ended: grants },
      'shared signal acted on',
    )
  }

  /**
   * The subject, keeping only the people bearward knows; null when none is left. A disabled
   * account is remembered even for someone who never signed in: it refuses their first sign-in.
   */
  async #known(subject: SignalSubject | null, action: SignalAction): Promise<SignalSubject | null> {
    if (subject === null || action.kind === 'disable' || action.kind === 'enable') return subject
    const subs: string[] = []
    for (const sub of subject.subs) if (await this.#deps.knownPerson(sub)) subs.push(sub)
    if (subs.length === 0 && subject.providerSession === null) return null
    return { ...subject, subs }
  }

  #noteUnknown(t: SignalTransmitterConfig, event: string, format: string, jti: string): void {
    const now = this.#deps.clock.now()
    const seen = this.#unknown.get(t.issuer) ?? { count: 0, loggedAt: Number.NEGATIVE_INFINITY }
    seen.count++
    if (now - seen.loggedAt >= UNKNOWN_LOG_EVERY_MS) {
      this.#deps.log.warn(
        { audit: 'signal', transmitter: t.issuer, event, subject_format: format, jti, unknown_since_last_line: seen.count },
        'shared signal about a subject bearward does not know; acknowledged',
      )
      seen.count = 0
      seen.loggedAt = now
    }
    // Keyed by configured issuers only: bounded by the config.
    this.#unknown.set(t.issuer, seen)
  }
}
