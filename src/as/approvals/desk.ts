/**
 * The approval desk (issue #41, docs/approvals.md): what both kinds of approval share on top of the
 * store. The gateway opens `mcp_tool` approvals and passes calls with them; /bc-authorize opens `ciba`
 * ones and /token takes them; the approval page and the account page decide them. Every opening and
 * decision is bounded (per person and per client), audited and counted here, once.
 *
 * `onDecided` listeners run on the instance where the person decided (CIBA's ping goes out from there);
 * other instances see the decision through the store.
 */
import type { Audit } from '../../audit/trail.js'
import { epochSeconds, type Clock } from '../../clock.js'
import { randomBase64url } from '../../crypto/random.js'
import type { ApprovalsConfig } from '../../config/validated-config.js'
import type { Metrics } from '../../metrics.js'
import type { ApprovalKind, ApprovalRecord, ApprovalSignIn, ApprovalStore, ApprovalSubject, OpenResult } from '../../store/types.js'

/** Pending approvals one person may have at once (a flood of agent calls cannot bury the page). */
export const DEFAULT_MAX_PENDING_PER_PERSON = 20
/** Pending approvals one client may have at once, over all people. */
export const DEFAULT_MAX_PENDING_PER_CLIENT = 100
/** How many approvals the account page lists. */
export const LISTED_APPROVALS = 50

export interface ApprovalDeskDeps {
  readonly store: { readonly approvals: ApprovalStore }
  readonly clock: Clock
  readonly audit: Audit
  readonly metrics: Metrics
  readonly maxPendingPerPerson?: number
  readonly maxPendingPerClient?: number
}

/** The desk of one Runtime's face, bounded by the top-level `approvals` settings. */
export function deskFor(deps: Omit<ApprovalDeskDeps, 'maxPendingPerPerson' | 'maxPendingPerClient'>, approvals: ApprovalsConfig): ApprovalDesk {
  return new ApprovalDesk({ ...deps, maxPendingPerPerson: approvals.maxPendingPerPerson, maxPendingPerClient: approvals.maxPendingPerClient })
}

/** What a caller asks for; the desk makes the id and the times. */
export interface ApprovalRequest {
  readonly kind: ApprovalKind
  readonly sub: string
  readonly clientId: string
  readonly grantId: string | null
  readonly binding: string
  readonly subject: ApprovalSubject
  readonly signIn: ApprovalSignIn
  /** How long the person has to decide. */
  readonly ttlSec: number
  /** The id and expiry {@link ApprovalDesk.reserve} gave, when the caller prepared for the approval before opening it. */
  readonly reserved?: ReservedApproval
}

/** An approval's id and expiry, known before it is opened (CIBA queues its ping first). */
export interface ReservedApproval {
  readonly id: string
  /** Epoch seconds. */
  readonly expiresAt: number
}

/** Who decided, from where (the audit line). */
export interface Decider {
  readonly sub: string
  readonly acr: string | null
  readonly address: string | null
  readonly userAgent: string | null
}

export type DecidedListener = (record: ApprovalRecord) => void | Promise<void>

/** Random and URL-safe: the approval page's path carries it. 128 bits. */
function newApprovalId(): string {
  return randomBase64url(16)
}

export class ApprovalDesk {
  readonly #d: ApprovalDeskDeps
  readonly #maxPerPerson: number
  readonly #maxPerClient: number
  readonly #listeners = new Set<DecidedListener>()
  /** Told of each approval created (the notifier); failures are theirs to log. */
  readonly #openedListeners = new Set<DecidedListener>()

  constructor(deps: ApprovalDeskDeps) {
    this.#d = deps
    this.#maxPerPerson = deps.maxPendingPerPerson ?? DEFAULT_MAX_PENDING_PER_PERSON
    this.#maxPerClient = deps.maxPendingPerClient ?? DEFAULT_MAX_PENDING_PER_CLIENT
  }

  #now(): number {
    return epochSeconds(this.#d.clock)
  }

  /** Called with each decided record on this instance; returns the unsubscribe. */
  onDecided(listener: DecidedListener): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** Called with each approval this instance created (the notification); returns the unsubscribe. */
  onOpened(listener: DecidedListener): () => void {
    this.#openedListeners.add(listener)
    return () => this.#openedListeners.delete(listener)
  }

  /** The id and expiry of an approval to open with `ttlSec` (pass them as `reserved`): what must be stored before it exists can name it. */
  reserve(ttlSec: number): ReservedApproval {
    return { id: newApprovalId(), expiresAt: this.#now() + ttlSec }
  }

  /** Open an approval, or find the pending one of the same call; refused past the bounds. */
  async open(request: ApprovalRequest): Promise<OpenResult> {
    const now = this.#now()
    const result = await this.#d.store.approvals.open(
      {
        id: request.reserved?.id ?? newApprovalId(),
        kind: request.kind,
        sub: request.sub,
        clientId: request.clientId,
        grantId: request.grantId,
        binding: request.binding,
        subject: request.subject,
        signIn: request.signIn,
        expiresAt: request.reserved?.expiresAt ?? now + request.ttlSec,
      },
      now,
      this.#maxPerPerson,
      this.#maxPerClient,
    )
    const outcome = result.outcome === 'created' ? 'requested' : result.outcome === 'pending' ? 'again' : 'refused'
    this.#d.metrics.approvals.inc({ kind: request.kind, outcome })
    this.#d.audit.record({
      event: 'approval.requested',
      actor: { kind: 'client', id: request.clientId },
      subject: result.outcome === 'too_many' ? { kind: 'person', id: request.sub } : { kind: 'approval', id: result.record.id },
      clientId: request.clientId,
      outcome: result.outcome === 'too_many' ? 'failure' : 'success',
      reason: result.outcome === 'too_many' ? 'too_many_pending' : result.outcome === 'pending' ? 'still_pending' : request.kind,
    })
    if (result.outcome === 'created') for (const l of this.#openedListeners) void this.#tell(l, result.record)
    return result
  }

  get(id: string): Promise<ApprovalRecord | null> {
    return this.#d.store.approvals.get(id, this.#now())
  }

  /**
   * The person decides: only theirs, only while pending. `approvedForSec`: how long the approval then
   * lasts (the retry's window; with `reuse: ttl` every matching call passes until then). Null when it
   * was not theirs or no longer pending.
   */
  async decide(id: string, decision: 'approved' | 'denied', by: Decider, approvedForSec: number): Promise<ApprovalRecord | null> {
    const now = this.#now()
    const record = await this.#d.store.approvals.decide(id, by.sub, decision, by.acr, now + approvedForSec, now)
    if (record === null) return null
    this.#d.metrics.approvals.inc({ kind: record.kind, outcome: decision })
    this.#d.audit.record({
      event: decision === 'approved' ? 'approval.approved' : 'approval.denied',
      actor: { kind: 'person', id: by.sub },
      subject: { kind: 'approval', id },
      clientId: record.clientId,
      address: by.address,
      userAgent: by.userAgent,
      outcome: 'success',
      reason: record.kind,
    })
    for (const l of this.#listeners) await this.#tell(l, record)
    return record
  }

  /** A listener's failure is not the decision's: it is the listener's to log. */
  async #tell(l: DecidedListener, record: ApprovalRecord): Promise<void> {
    try {
      await l(record)
    } catch {
      // Listeners log their own failures; a decision stands whatever they do.
    }
  }

  /** Pass one call with an approved approval of the same binding (mcp_tool). */
  async consume(sub: string, clientId: string, grantId: string | null, binding: string): Promise<ApprovalRecord | null> {
    const record = await this.#d.store.approvals.consume(sub, clientId, grantId, binding, this.#now())
    if (record !== null) this.#d.metrics.approvals.inc({ kind: record.kind, outcome: 'passed' })
    return record
  }

  /** Approved → used by id, once (CIBA's token request). */
  async take(id: string): Promise<ApprovalRecord | null> {
    const record = await this.#d.store.approvals.take(id, this.#now())
    if (record !== null) this.#d.metrics.approvals.inc({ kind: record.kind, outcome: 'passed' })
    return record
  }

  /** The person's approvals, pending and given, newest first (the account page). */
  listForPerson(sub: string): Promise<ApprovalRecord[]> {
    return this.#d.store.approvals.listForPerson(sub, this.#now(), LISTED_APPROVALS)
  }

  /** A grant ended (revocation, withdrawal): its approvals can pass nothing more. */
  async cancelGrant(grantId: string): Promise<number> {
    const n = await this.#d.store.approvals.cancelGrant(grantId, this.#now())
    if (n > 0) this.#d.metrics.approvals.inc({ kind: 'mcp_tool', outcome: 'cancelled' }, n)
    return n
  }

  async cancelPerson(sub: string): Promise<number> {
    const n = await this.#d.store.approvals.cancelPerson(sub, this.#now())
    if (n > 0) this.#d.metrics.approvals.inc({ kind: 'any', outcome: 'cancelled' }, n)
    return n
  }
}
