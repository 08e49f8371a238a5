/**
 * Who a SET is about: SSF 1.0 §3 / RFC 9493 subject identifiers, mapped to
 * bearward `sub`s. A SET names its subject in `sub_id` (SSF 1.0 §4.1.2); older
 * transmitters put it in the event body as `subject`, read as well.
 *
 * - `iss_sub`: the person the identity provider whose issuer is `iss` calls
 *   `sub` (`<provider id>:<sub>`, src/as/identity-providers/person.ts); a
 *   transmitter whose issuer is one of the providers' names only that
 *   provider's people (another `iss` is unknown);
 * - `email`: through the transmitter's `subjects.email` rule;
 * - `opaque`: the `id` is taken as the person's `sub` at the identity provider
 *   whose issuer is the transmitter's, when there is one;
 * - `complex`: its `user` member, by the rules above (a `session` member alone
 *   names a provider session, which ends through the session index).
 *
 * Anything else is unknown: acknowledged and logged by the receiver, never
 * an error the transmitter would retry.
 */
import type { IdentityProviderConfig, SignalTransmitterConfig, UserConfig } from '../config/validated-config.js'
import { upstreamSubject } from '../as/identity-providers/person.js'

/** Whom an event is about, in bearward's terms. */
export interface SignalSubject {
  /** bearward `sub`s (an email may match a user and a provider person; usually one). */
  subs: string[]
  /** A provider session named by a `complex` subject's `session` (`iss_sub` or `opaque`): ends only that session. */
  providerSession: { provider: string; sid: string } | null
  /** The provider the person signs in through, when the subject names one: account-disabled refuses its sign-ins. */
  provider: string | null
}

/** A compact, log-safe label of the subject's format (never the identifier). */
export type SubjectFormat = 'iss_sub' | 'email' | 'opaque' | 'complex' | 'other'

type Id = Readonly<Record<string, unknown>>

function isId(v: unknown): v is Id {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** Resolves subject identifiers for one configuration's identity providers and users. */
export class SubjectMapper {
  readonly #byIssuer: ReadonlyMap<string, IdentityProviderConfig>
  readonly #usersByEmail: ReadonlyMap<string, string[]>

  constructor(providers: readonly IdentityProviderConfig[], users: readonly UserConfig[]) {
    this.#byIssuer = new Map(providers.map((p) => [p.issuer.replace(/\/+$/, ''), p]))
    const byEmail = new Map<string, string[]>()
    for (const u of users) {
      const email = u.claims.email
      if (typeof email !== 'string') continue
      const key = email.toLowerCase()
      byEmail.set(key, [...(byEmail.get(key) ?? []), u.sub])
    }
    this.#usersByEmail = byEmail
  }

  /**
   * The subject identifier of a SET: `sub_id`, else the event body's `subject`. Drafts before
   * RFC 9493 (Google's RISC among them) name the format `subject_type` and spell it `iss-sub`:
   * read as `format: iss_sub`.
   */
  static identifierOf(claims: Readonly<Record<string, unknown>>, event: Readonly<Record<string, unknown>>): Id | null {
    const id = isId(claims.sub_id) ? claims.sub_id : isId(event.subject) ? event.subject : null
    if (id === null || id.format !== undefined || typeof id.subject_type !== 'string') return id
    return { ...id, format: id.subject_type.replace(/-/g, '_') }
  }

  static formatOf(id: Id | null): SubjectFormat {
    const f = id?.format
    return f === 'iss_sub' || f === 'email' || f === 'opaque' || f === 'complex' ? f : 'other'
  }

  /** The person(s) `id` names for `transmitter`; null when nobody bearward knows of. */
  resolve(id: Id | null, transmitter: SignalTransmitterConfig): SignalSubject | null {
    if (id === null) return null
    if (id.format === 'complex') {
      const user = isId(id.user) ? this.resolve(id.user, transmitter) : null
      const session = isId(id.session) ? this.#session(id.session, transmitter) : null
      if (user === null && session === null) return null
      return {
        subs: user?.subs ?? [],
        providerSession: session,
        provider: user?.provider ?? session?.provider ?? null,
      }
    }
    const simple = this.#simple(id, transmitter)
    return simple === null ? null : { ...simple, providerSession: null }
  }

  #simple(id: Id, transmitter: SignalTransmitterConfig): { subs: string[]; provider: string | null } | null {
    switch (id.format) {
      case 'iss_sub': {
        if (typeof id.iss !== 'string' || typeof id.sub !== 'string') return null
        const named = this.#byIssuer.get(id.iss.replace(/\/+$/, ''))
        // A transmitter that is itself one of the identity providers speaks for its own people
        // only: its signature vouches for what it knows, not for another provider's accounts
        // (Okta's transmitter must not end, or disable, the people who sign in through Google).
        const own = this.#byIssuer.get(transmitter.issuer.replace(/\/+$/, ''))
        if (own !== undefined && named !== own) return null
        return this.#atProvider(named, id.sub)
      }
      case 'opaque': {
        if (typeof id.id !== 'string') return null
        return this.#atProvider(this.#byIssuer.get(transmitter.issuer.replace(/\/+$/, '')), id.id)
      }
      case 'email': {
        if (typeof id.email !== 'string') return null
        const rule = transmitter.subjects.email
        if (rule === null) return null
        if (rule.kind === 'users') {
          const subs = this.#usersByEmail.get(id.email.toLowerCase())
          return subs === undefined ? null : { subs, provider: null }
        }
        const sub = upstreamSubject(rule.provider, id.email)
        return sub === null ? null : { subs: [sub], provider: rule.provider }
      }
      default:
        return null
    }
  }

  #atProvider(provider: IdentityProviderConfig | undefined, upstreamSub: string): { subs: string[]; provider: string } | null {
    if (provider === undefined) return null
    const sub = upstreamSubject(provider.id, upstreamSub)
    return sub === null ? null : { subs: [sub], provider: provider.id }
  }

  #session(id: Id, transmitter: SignalTransmitterConfig): { provider: string; sid: string } | null {
    // A session identifier is `opaque` (its id is the provider's sid); the provider is the transmitter's own.
    const sid = id.format === 'opaque' && typeof id.id === 'string' ? id.id : null
    const provider = this.#byIssuer.get(transmitter.issuer.replace(/\/+$/, ''))
    if (sid === null || provider === undefined || sid.length > 255) return null
    return { provider: provider.id, sid }
  }
}
