/**
 * The embedded store: one process, no Redis. Same semantics as `redis.ts`
 * (both pass `test/store/contract.ts`); every transition runs in one
 * synchronous block, which is what makes it atomic on Node's single thread.
 *
 * Expiry is judged by the injected Clock, lazily on read; an unref'd sweep
 * drops dead entries so memory stays bounded without reads.
 */
import type { Clock } from '../clock.js'
import { StoreUnavailableError } from '../errors.js'
import type {
  AllowanceNote,
  AllowanceRecord,
  CodeRecord,
  DeviceDecision,
  DeviceRecord,
  GrantRecord,
  HitWindow,
  OpaqueTokenRecord,
  PollResult,
  RefreshLookup,
  ClientSeat,
  RegisteredClientRecord,
  RevocationEntry,
  RevocationKind,
  RotateResult,
  SessionRecord,
  UpstreamLoginRecord,
  UpstreamPersonRecord,
  PasskeyChallengeRecord,
  PasskeyRecord,
  TotpRecord,
  PasskeyUseResult,
  Store,
  TakeCodeResult,
} from './types.js'

interface CodeEntry {
  record: CodeRecord
  used: boolean
  grantId: string | null
  /** Epoch ms after which neither the code nor its Used tombstone exists. */
  deadlineMs: number
}

interface FamilyEntry {
  grant: GrantRecord
  /** Hash of the current refresh token, or null when none was issued. */
  current: string | null
  /** Every refresh token of the family (current and replaced) → issuedAt (epoch s). */
  tokens: Map<string, number>
  /** Revoked families stay as tombstones so a replayed token still reads `reused`. */
  revoked: boolean
}

interface Expiring<T> {
  value: T
  expMs: number
}

/** One person's allowance of one client (the account page); grant id → until (epoch s). */
interface AllowanceEntry {
  scopes: string[]
  at: number
  expMs: number
  grants: Map<string, number>
}

interface Window {
  count: number
  resetMs: number
}

/** Default period of the sweep that drops expired entries. */
const DEFAULT_SWEEP_MS = 60_000

/** Deep copy, so a caller mutating a returned record cannot change stored state (as with Redis). */
function copy<T>(value: T): T {
  return structuredClone(value)
}

export interface MemoryStoreOptions {
  /** How often expired entries are swept (ms, default 60 s). 0 disables the sweep. */
  sweepIntervalMs?: number
  /** Where a failing revocation subscriber is reported. */
  log?: { error(obj: object, msg: string): void }
}

/**
 * In-process {@link Store}. Revocations are published to subscribers of this
 * instance only (there is no other instance).
 */
export class MemoryStore implements Store {
  readonly kind = 'memory' as const

  readonly #clock: Clock
  readonly #codes = new Map<string, CodeEntry>()
  readonly #families = new Map<string, FamilyEntry>()
  /** Refresh-token hash → grant id. */
  readonly #refreshIndex = new Map<string, string>()
  readonly #revoked: Record<RevocationKind, Map<string, number>> = { jti: new Map(), grant: new Map() }
  readonly #listeners = new Set<(entry: RevocationEntry) => void>()
  readonly #opaque = new Map<string, OpaqueTokenRecord>()
  readonly #devices = new Map<string, DeviceRecord>()
  /** Normalized user code → device-code hash. */
  readonly #userCodes = new Map<string, Expiring<string>>()
  readonly #sessions = new Map<string, Expiring<SessionRecord>>()
  readonly #consents = new Map<string, Expiring<string[]>>()
  /** sub → client id → allowance. */
  readonly #allowances = new Map<string, Map<string, AllowanceEntry>>()
  /** consentKey(sub, client) → when (ms) the person withdrew that client, kept for the code's lifetime. */
  readonly #withdrawals = new Map<string, Expiring<number>>()
  readonly #hits = new Map<string, Window>()
  readonly #clients = new Map<string, RegisteredClientRecord>()
  /** useOnce keys → epoch ms until which they count as used. */
  readonly #used = new Map<string, number>()
  /** Known-browser cookie hash → the sub it was issued for. */
  readonly #knownBrowsers = new Map<string, Expiring<string>>()
  readonly #upstreamLogins = new Map<string, Expiring<UpstreamLoginRecord>>()
  readonly #upstreamPeople = new Map<string, Expiring<UpstreamPersonRecord>>()
  readonly #passkeyChallenges = new Map<string, Expiring<PasskeyChallengeRecord>>()
  /** Passkeys by credential id (ids are unique across people). */
  readonly #passkeys = new Map<string, PasskeyRecord>()
  /** Authenticator apps by sub (kept until removed, like passkeys). */
  readonly #totp = new Map<string, TotpRecord>()
  readonly #log: MemoryStoreOptions['log']
  #sweep: NodeJS.Timeout | null = null
  #closed = false

  constructor(clock: Clock, options: MemoryStoreOptions = {}) {
    this.#clock = clock
    this.#log = options.log
    const every = options.sweepIntervalMs ?? DEFAULT_SWEEP_MS
    if (every > 0) {
      this.#sweep = setInterval(() => this.sweep(), every)
      this.#sweep.unref()
    }
  }

  #nowMs(): number {
    return this.#clock.now()
  }

  #nowSec(): number {
    return Math.floor(this.#clock.now() / 1000)
  }

  /** Every method goes through here: a closed store answers like an unreachable one. */
  #open(): void {
    if (this.#closed) throw new StoreUnavailableError('store closed')
  }

  /** Entries held in all tables, expired ones included until swept (for tests and metrics). */
  get size(): number {
    return (
      this.#codes.size +
      this.#families.size +
      this.#refreshIndex.size +
      this.#revoked.jti.size +
      this.#revoked.grant.size +
      this.#opaque.size +
      this.#devices.size +
      this.#userCodes.size +
      this.#sessions.size +
      this.#consents.size +
      this.#hits.size +
      this.#used.size +
      this.#knownBrowsers.size +
      this.#allowances.size +
      this.#withdrawals.size +
      this.#clients.size +
      this.#upstreamLogins.size +
      this.#upstreamPeople.size +
      this.#passkeyChallenges.size +
      this.#passkeys.size
    )
  }

  /** Drop every entry whose time has passed (the periodic sweep; callable directly). */
  sweep(): void {
    const now = this.#nowMs()
    const nowSec = this.#nowSec()
    for (const [k, e] of this.#codes) if (now >= e.deadlineMs) this.#codes.delete(k)
    for (const [gid, f] of this.#families) {
      if (now >= f.grant.expiresAt * 1000) this.#dropFamily(gid, f)
    }
    for (const kind of ['jti', 'grant'] as const) {
      for (const [id, exp] of this.#revoked[kind]) if (exp < nowSec) this.#revoked[kind].delete(id)
    }
    for (const [k, r] of this.#opaque) if (now >= r.exp * 1000) this.#opaque.delete(k)
    for (const [k, r] of this.#devices) if (now >= r.expiresAt * 1000) this.#devices.delete(k)
    for (const map of [
      this.#userCodes,
      this.#sessions,
      this.#consents,
      this.#knownBrowsers,
      this.#upstreamLogins,
      this.#upstreamPeople,
      this.#passkeyChallenges,
    ]) {
      for (const [k, e] of map) if (now >= e.expMs) map.delete(k)
    }
    for (const [k, w] of this.#hits) if (now >= w.resetMs) this.#hits.delete(k)
    for (const [k, until] of this.#used) if (now >= until) this.#used.delete(k)
    this.#sweepAllowances(now)
  }

  async ping(): Promise<void> {
    this.#open()
  }

  async close(): Promise<void> {
    this.#closed = true
    if (this.#sweep) clearInterval(this.#sweep)
    this.#sweep = null
    this.#listeners.clear()
  }

  // -- authorization codes ---------------------------------------------------

  async putCode(codeHash: string, record: CodeRecord, ttlSec: number): Promise<void> {
    this.#open()
    const deadlineMs = Math.max(this.#nowMs() + ttlSec * 1000, record.expiresAt * 1000)
    this.#codes.set(codeHash, { record: copy(record), used: false, grantId: null, deadlineMs })
  }

  async takeCode(codeHash: string): Promise<TakeCodeResult> {
    this.#open()
    const e = this.#liveCode(codeHash)
    if (!e) return { status: 'missing' }
    if (e.used) return { status: 'used', record: copy(e.record), grantId: e.grantId }
    if (this.#nowMs() >= e.record.expiresAt * 1000) return { status: 'missing' }
    e.used = true
    return { status: 'taken', record: copy(e.record) }
  }

  async linkCodeGrant(codeHash: string, grantId: string): Promise<void> {
    this.#open()
    const e = this.#liveCode(codeHash)
    if (e?.used) e.grantId = grantId
  }

  #liveCode(codeHash: string): CodeEntry | null {
    const e = this.#codes.get(codeHash)
    if (!e) return null
    if (this.#nowMs() >= e.deadlineMs) {
      this.#codes.delete(codeHash)
      return null
    }
    return e
  }

  // -- grants and refresh families -------------------------------------------

  async createGrant(grant: GrantRecord, refreshHash: string | null): Promise<void> {
    this.#open()
    const old = this.#families.get(grant.grantId)
    if (old) this.#dropFamily(grant.grantId, old)
    const tokens = new Map<string, number>()
    if (refreshHash !== null) {
      tokens.set(refreshHash, this.#nowSec())
      this.#refreshIndex.set(refreshHash, grant.grantId)
    }
    this.#families.set(grant.grantId, { grant: copy(grant), current: refreshHash, tokens, revoked: false })
  }

  async getGrant(grantId: string): Promise<GrantRecord | null> {
    this.#open()
    const f = this.#family(grantId)
    return f && !f.revoked ? copy(f.grant) : null
  }

  async noteAccessExp(grantId: string, exp: number): Promise<void> {
    this.#open()
    const f = this.#family(grantId)
    if (f && !f.revoked) f.grant.maxAccessExp = Math.max(f.grant.maxAccessExp, exp)
  }

  async rotateRefresh(oldHash: string, newHash: string | null, newExpiresAt: number, _grantId?: string, accessExp?: number): Promise<RotateResult> {
    this.#open()
    const gid = this.#refreshIndex.get(oldHash)
    const f = gid === undefined ? null : this.#family(gid)
    if (gid === undefined || !f || !f.tokens.has(oldHash)) return { status: 'missing' }
    if (f.current === oldHash && !f.revoked) {
      if (newHash !== null) {
        f.tokens.set(newHash, this.#nowSec())
        this.#refreshIndex.set(newHash, gid)
        f.current = newHash
        f.grant.expiresAt = newExpiresAt
      }
      if (accessExp !== undefined) f.grant.maxAccessExp = Math.max(f.grant.maxAccessExp, accessExp)
      return { status: 'rotated', grant: copy(f.grant) }
    }
    if (f.current === oldHash) return { status: 'missing' } // current token of a revoked family
    // A replaced token came back: treat as theft (RFC 9700 4.14.2), revoke the family.
    if (!f.revoked) this.#revokeFamily(gid, f, Math.max(f.grant.maxAccessExp, this.#nowSec()))
    return { status: 'reused', grant: copy(f.grant) }
  }

  async findRefresh(refreshHash: string): Promise<RefreshLookup | null> {
    this.#open()
    const gid = this.#refreshIndex.get(refreshHash)
    const f = gid === undefined ? null : this.#family(gid)
    const issuedAt = f?.tokens.get(refreshHash)
    if (!f || f.revoked || issuedAt === undefined) return null
    return { grant: copy(f.grant), current: f.current === refreshHash, issuedAt }
  }

  async revokeGrant(grantId: string, until: number): Promise<void> {
    this.#open()
    const f = this.#family(grantId)
    if (f && !f.revoked) {
      this.#revokeFamily(grantId, f, Math.max(until, f.grant.maxAccessExp))
    } else {
      this.#addRevocation({ kind: 'grant', id: grantId, exp: Math.max(until, f?.grant.maxAccessExp ?? 0) })
    }
  }

  /** Family → tombstone (tokens kept to recognise reuse) + revocation entry, in one synchronous step. */
  #revokeFamily(grantId: string, f: FamilyEntry, until: number): void {
    f.revoked = true
    this.#addRevocation({ kind: 'grant', id: grantId, exp: until })
  }

  /** The family, or null once its lifetime has passed (then it is dropped). */
  #family(grantId: string): FamilyEntry | null {
    const f = this.#families.get(grantId)
    if (!f) return null
    if (this.#nowMs() >= f.grant.expiresAt * 1000) {
      this.#dropFamily(grantId, f)
      return null
    }
    return f
  }

  #dropFamily(grantId: string, f: FamilyEntry): void {
    this.#families.delete(grantId)
    for (const h of f.tokens.keys()) {
      if (this.#refreshIndex.get(h) === grantId) this.#refreshIndex.delete(h)
    }
  }

  // -- revocation list -------------------------------------------------------

  async addRevocation(entry: RevocationEntry): Promise<void> {
    this.#open()
    this.#addRevocation(entry)
  }

  #addRevocation(entry: RevocationEntry): void {
    const map = this.#revoked[entry.kind]
    const exp = Math.max(entry.exp, map.get(entry.id) ?? entry.exp)
    map.set(entry.id, exp)
    const published: RevocationEntry = { kind: entry.kind, id: entry.id, exp }
    // Delivered after the current transition completes, like a pub/sub message;
    // a throwing subscriber must not become an uncaught exception.
    for (const fn of this.#listeners) {
      queueMicrotask(() => {
        try {
          fn({ ...published })
        } catch (err) {
          this.#log?.error({ err: err instanceof Error ? err.message : String(err) }, 'revocation listener failed')
        }
      })
    }
  }

  async listRevocations(): Promise<RevocationEntry[]> {
    this.#open()
    const nowSec = this.#nowSec()
    const out: RevocationEntry[] = []
    for (const kind of ['jti', 'grant'] as const) {
      for (const [id, exp] of this.#revoked[kind]) {
        if (exp >= nowSec) out.push({ kind, id, exp })
        else this.#revoked[kind].delete(id)
      }
    }
    return out
  }

  async subscribeRevocations(onEntry: (entry: RevocationEntry) => void): Promise<() => Promise<void>> {
    this.#open()
    // Wrap so the same function subscribed twice gets two independent subscriptions.
    const fn = (e: RevocationEntry): void => onEntry(e)
    this.#listeners.add(fn)
    return async () => {
      this.#listeners.delete(fn)
    }
  }

  // -- opaque access tokens --------------------------------------------------

  async putOpaqueToken(tokenHash: string, record: OpaqueTokenRecord): Promise<void> {
    this.#open()
    this.#opaque.set(tokenHash, copy(record))
  }

  async getOpaqueToken(tokenHash: string): Promise<OpaqueTokenRecord | null> {
    this.#open()
    const r = this.#liveOpaque(tokenHash)
    return r ? copy(r) : null
  }

  async deleteOpaqueToken(tokenHash: string): Promise<boolean> {
    this.#open()
    const r = this.#liveOpaque(tokenHash)
    this.#opaque.delete(tokenHash)
    return r !== null
  }

  #liveOpaque(tokenHash: string): OpaqueTokenRecord | null {
    const r = this.#opaque.get(tokenHash)
    if (!r) return null
    if (this.#nowMs() >= r.exp * 1000) {
      this.#opaque.delete(tokenHash)
      return null
    }
    return r
  }

  // -- device authorization (RFC 8628) ----------------------------------------

  async putDevice(deviceHash: string, record: DeviceRecord): Promise<boolean> {
    this.#open()
    if (this.#live(this.#userCodes, record.userCode)) return false
    this.#userCodes.set(record.userCode, { value: deviceHash, expMs: record.expiresAt * 1000 })
    this.#devices.set(deviceHash, copy(record))
    return true
  }

  async getDeviceByUserCode(userCode: string): Promise<{ deviceHash: string; record: DeviceRecord } | null> {
    this.#open()
    const deviceHash = this.#live(this.#userCodes, userCode)
    const record = deviceHash === null ? null : this.#liveDevice(deviceHash)
    return deviceHash !== null && record ? { deviceHash, record: copy(record) } : null
  }

  async decideDevice(userCode: string, decision: DeviceDecision): Promise<boolean> {
    this.#open()
    const deviceHash = this.#live(this.#userCodes, userCode)
    const r = deviceHash === null ? null : this.#liveDevice(deviceHash)
    if (r?.status !== 'pending') return false
    if (decision.approved) {
      r.status = 'approved'
      r.sub = decision.sub
      r.authTime = decision.authTime
      if (decision.amr !== undefined) r.amr = [...decision.amr]
      if (decision.acr !== undefined) r.acr = decision.acr
      r.decidedAtMs = this.#nowMs()
    } else {
      r.status = 'denied'
    }
    return true
  }

  async pollDevice(deviceHash: string, nowMs: number): Promise<PollResult> {
    this.#open()
    const r = this.#liveDevice(deviceHash)
    if (!r || r.status === 'consumed') return { status: 'missing' }
    const tooSoon = r.lastPollMs > 0 && nowMs - r.lastPollMs < r.intervalSec * 1000
    r.lastPollMs = nowMs
    if (tooSoon) {
      r.intervalSec += 5 // RFC 8628 3.5
      return { status: 'slow_down', record: copy(r) }
    }
    if (r.status === 'approved') {
      r.status = 'consumed'
      return { status: 'approved', record: copy(r) }
    }
    return { status: r.status, record: copy(r) }
  }

  #liveDevice(deviceHash: string): DeviceRecord | null {
    const r = this.#devices.get(deviceHash)
    if (!r) return null
    if (this.#nowMs() >= r.expiresAt * 1000) {
      this.#devices.delete(deviceHash)
      return null
    }
    return r
  }

  // -- browser sessions and consent ------------------------------------------

  async putSession(sessionId: string, record: SessionRecord, ttlSec: number): Promise<void> {
    this.#open()
    this.#sessions.set(sessionId, { value: copy(record), expMs: this.#nowMs() + ttlSec * 1000 })
  }

  async getSession(sessionId: string): Promise<SessionRecord | null> {
    this.#open()
    const r = this.#live(this.#sessions, sessionId)
    return r ? copy(r) : null
  }

  async deleteSession(sessionId: string): Promise<void> {
    this.#open()
    this.#sessions.delete(sessionId)
  }

  async putConsent(sub: string, clientId: string, scopes: string[], ttlSec: number): Promise<void> {
    this.#open()
    this.#consents.set(consentKey(sub, clientId), { value: [...scopes], expMs: this.#nowMs() + ttlSec * 1000 })
  }

  async getConsent(sub: string, clientId: string): Promise<string[] | null> {
    this.#open()
    const r = this.#live(this.#consents, consentKey(sub, clientId))
    return r ? [...r] : null
  }

  // -- what a person allowed (the account page) -------------------------------

  async noteAllowance(sub: string, clientId: string, note: AllowanceNote): Promise<boolean> {
    this.#open()
    const now = this.#nowMs()
    const withdrawnAt = this.#live(this.#withdrawals, consentKey(sub, clientId))
    if (note.authorizedAtMs !== undefined && withdrawnAt !== null && withdrawnAt >= note.authorizedAtMs) return false
    let byClient = this.#allowances.get(sub)
    if (!byClient) {
      byClient = new Map()
      this.#allowances.set(sub, byClient)
    }
    const untilMs = note.until * 1000
    const old = byClient.get(clientId)
    const e: AllowanceEntry = old && now < old.expMs ? old : { scopes: [], at: 0, expMs: 0, grants: new Map() }
    for (const s of note.scopes) if (!e.scopes.includes(s)) e.scopes.push(s)
    e.at = Math.max(e.at, note.at)
    e.expMs = Math.max(e.expMs, untilMs)
    if (note.grantId !== null) e.grants.set(note.grantId, Math.max(e.grants.get(note.grantId) ?? 0, note.until))
    byClient.set(clientId, e)
    return true
  }

  async listAllowances(sub: string): Promise<AllowanceRecord[]> {
    this.#open()
    const now = this.#nowMs()
    const out: AllowanceRecord[] = []
    for (const [clientId, e] of this.#allowances.get(sub) ?? []) {
      if (now >= e.expMs) continue
      out.push({ clientId, scopes: [...e.scopes], allowedAt: e.at, grantIds: this.#liveGrantIds(e, now) })
    }
    return out
  }

  async withdrawAllowance(sub: string, clientId: string, rememberSec: number): Promise<string[]> {
    this.#open()
    const now = this.#nowMs()
    this.#consents.delete(consentKey(sub, clientId))
    const old = this.#withdrawals.get(consentKey(sub, clientId))
    const keptMs = old !== undefined && now < old.expMs ? old.expMs : 0
    this.#withdrawals.set(consentKey(sub, clientId), { value: now, expMs: Math.max(keptMs, now + rememberSec * 1000) })
    const byClient = this.#allowances.get(sub)
    const e = byClient?.get(clientId)
    byClient?.delete(clientId)
    if (byClient?.size === 0) this.#allowances.delete(sub)
    return e ? this.#liveGrantIds(e, now) : []
  }

  #liveGrantIds(e: AllowanceEntry, nowMs: number): string[] {
    return [...e.grants].filter(([, until]) => nowMs < until * 1000).map(([gid]) => gid)
  }

  #sweepAllowances(nowMs: number): void {
    for (const [key, w] of this.#withdrawals) if (nowMs >= w.expMs) this.#withdrawals.delete(key)
    for (const [sub, byClient] of this.#allowances) {
      for (const [clientId, e] of byClient) if (nowMs >= e.expMs) byClient.delete(clientId)
      if (byClient.size === 0) this.#allowances.delete(sub)
    }
  }

  #live<T>(map: Map<string, Expiring<T>>, key: string): T | null {
    const e = map.get(key)
    if (!e) return null
    if (this.#nowMs() >= e.expMs) {
      map.delete(key)
      return null
    }
    return e.value
  }

  // -- registered clients (RFC 7591) -------------------------------------------

  async putClient(record: RegisteredClientRecord): Promise<void> {
    this.#open()
    this.#clients.set(record.clientId, copy(record))
  }

  async getClient(clientId: string): Promise<RegisteredClientRecord | null> {
    this.#open()
    const c = this.#liveClient(clientId)
    return c ? copy(c) : null
  }

  async touchClient(clientId: string, expiresAt: number): Promise<void> {
    this.#open()
    const c = this.#liveClient(clientId)
    if (c) c.expiresAt = Math.max(c.expiresAt, expiresAt)
  }

  async deleteClient(clientId: string): Promise<boolean> {
    this.#open()
    const c = this.#liveClient(clientId)
    this.#clients.delete(clientId)
    return c !== null
  }

  async putClientWithin(record: RegisteredClientRecord, maxLive: number): Promise<ClientSeat> {
    this.#open()
    // One synchronous step from count to insert: nothing else runs between them.
    const live = this.#liveClients()
    if (live.length >= maxLive) return { stored: false, live: live.length, freeAtMs: live.reduce((m, c) => Math.min(m, c.expiresAt), Infinity) * 1000 }
    this.#clients.set(record.clientId, copy(record))
    return { stored: true, live: live.length + 1, freeAtMs: 0 }
  }

  async countClients(): Promise<number> {
    this.#open()
    return this.#liveClients().length
  }

  /** The live registrations; the expired ones are forgotten on the way. */
  #liveClients(): RegisteredClientRecord[] {
    const live: RegisteredClientRecord[] = []
    for (const id of [...this.#clients.keys()]) {
      const c = this.#liveClient(id)
      if (c !== null) live.push(c)
    }
    return live
  }

  #liveClient(clientId: string): RegisteredClientRecord | null {
    const c = this.#clients.get(clientId)
    if (!c) return null
    if (this.#nowMs() >= c.expiresAt * 1000) {
      this.#clients.delete(clientId)
      return null
    }
    return c
  }

  // -- rate limits -----------------------------------------------------------

  async hit(key: string, windowSec: number): Promise<number> {
    this.#open()
    const now = this.#nowMs()
    const w = this.#hits.get(key)
    if (!w || now >= w.resetMs) {
      this.#hits.set(key, { count: 1, resetMs: now + windowSec * 1000 })
      return 1
    }
    w.count += 1
    return w.count
  }

  async hits(key: string): Promise<number> {
    this.#open()
    const w = this.#hits.get(key)
    return w && this.#nowMs() < w.resetMs ? w.count : 0
  }

  async hitWindow(key: string): Promise<HitWindow> {
    this.#open()
    const w = this.#hits.get(key)
    return w && this.#nowMs() < w.resetMs ? { count: w.count, resetMs: w.resetMs } : { count: 0, resetMs: 0 }
  }

  async clearHits(key: string): Promise<void> {
    this.#open()
    this.#hits.delete(key)
  }

  // -- single-use values -------------------------------------------------------

  async useOnce(key: string, ttlSec: number): Promise<boolean> {
    this.#open()
    const now = this.#nowMs()
    const until = this.#used.get(key)
    if (until !== undefined && now < until) return false
    this.#used.set(key, now + ttlSec * 1000)
    return true
  }

  // -- known browsers ----------------------------------------------------------

  async putKnownBrowser(tokenHash: string, sub: string, ttlSec: number): Promise<void> {
    this.#open()
    this.#knownBrowsers.set(tokenHash, { value: sub, expMs: this.#nowMs() + ttlSec * 1000 })
  }

  async getKnownBrowser(tokenHash: string): Promise<string | null> {
    this.#open()
    return this.#live(this.#knownBrowsers, tokenHash)
  }

  // -- upstream identity providers ----------------------------------------------

  async putUpstreamLogin(stateHash: string, record: UpstreamLoginRecord, ttlSec: number): Promise<void> {
    this.#open()
    this.#upstreamLogins.set(stateHash, { value: copy(record), expMs: this.#nowMs() + ttlSec * 1000 })
  }

  async takeUpstreamLogin(stateHash: string): Promise<UpstreamLoginRecord | null> {
    this.#open()
    const r = this.#live(this.#upstreamLogins, stateHash)
    this.#upstreamLogins.delete(stateHash)
    return r ? copy(r) : null
  }

  async putUpstreamPerson(sub: string, record: UpstreamPersonRecord, ttlSec: number): Promise<void> {
    this.#open()
    this.#upstreamPeople.set(sub, { value: copy(record), expMs: this.#nowMs() + ttlSec * 1000 })
  }

  async getUpstreamPerson(sub: string): Promise<UpstreamPersonRecord | null> {
    this.#open()
    const r = this.#live(this.#upstreamPeople, sub)
    return r ? copy(r) : null
  }

  // -- authenticator apps (TOTP) --------------------------------------------------

  async putTotp(sub: string, record: TotpRecord): Promise<void> {
    this.#open()
    this.#totp.set(sub, copy(record))
  }

  async getTotp(sub: string): Promise<TotpRecord | null> {
    this.#open()
    const r = this.#totp.get(sub)
    return r === undefined ? null : copy(r)
  }

  async deleteTotp(sub: string): Promise<void> {
    this.#open()
    this.#totp.delete(sub)
  }

  // -- passkeys (WebAuthn) -------------------------------------------------------

  async putPasskeyChallenge(challengeHash: string, record: PasskeyChallengeRecord, ttlSec: number): Promise<void> {
    this.#open()
    this.#passkeyChallenges.set(challengeHash, { value: copy(record), expMs: this.#nowMs() + ttlSec * 1000 })
  }

  async takePasskeyChallenge(challengeHash: string): Promise<PasskeyChallengeRecord | null> {
    this.#open()
    const r = this.#live(this.#passkeyChallenges, challengeHash)
    this.#passkeyChallenges.delete(challengeHash)
    return r ? copy(r) : null
  }

  async addPasskey(record: PasskeyRecord): Promise<boolean> {
    this.#open()
    if (this.#passkeys.has(record.credentialId)) return false
    this.#passkeys.set(record.credentialId, copy(record))
    return true
  }

  async getPasskey(credentialId: string): Promise<PasskeyRecord | null> {
    this.#open()
    const r = this.#passkeys.get(credentialId)
    return r ? copy(r) : null
  }

  async listPasskeys(sub: string): Promise<PasskeyRecord[]> {
    this.#open()
    return [...this.#passkeys.values()]
      .filter((r) => r.sub === sub)
      .sort((a, b) => a.createdAt - b.createdAt)
      .map(copy)
  }

  async renamePasskey(sub: string, credentialId: string, name: string): Promise<boolean> {
    this.#open()
    const r = this.#passkeys.get(credentialId)
    if (r === undefined || r.sub !== sub) return false
    r.name = name
    return true
  }

  async removePasskey(sub: string, credentialId: string): Promise<boolean> {
    this.#open()
    if (this.#passkeys.get(credentialId)?.sub !== sub) return false
    return this.#passkeys.delete(credentialId)
  }

  async usePasskey(sub: string, credentialId: string, use: { counter: number; backedUp: boolean; at: number }): Promise<PasskeyUseResult> {
    this.#open()
    const r = this.#passkeys.get(credentialId)
    if (r === undefined || r.sub !== sub) return 'missing'
    if ((use.counter > 0 || r.counter > 0) && use.counter <= r.counter) return 'regressed'
    r.counter = use.counter
    r.backedUp = use.backedUp
    r.lastUsedAt = use.at
    return 'used'
  }
}

function consentKey(sub: string, clientId: string): string {
  // JSON of the pair: unambiguous whatever characters sub or client id contain.
  return JSON.stringify([sub, clientId])
}
