/**
 * Approvals (issue #41) on Redis.
 *
 * Keys, by the person (`{sub}` tag: every transition of one person's approvals is one script):
 * `p appr:{sub}` hash id → the record's JSON as opened (never changed); `p apprs:{sub}` hash id → its
 * state JSON (status, expiry, decision: see scripts.ts). Beside them, each on its own tag:
 * `p apprid:{id}` → sub (get and take by id), `p apprg:{grant}` set of subs (cancel a grant's
 * approvals) and `p apprc:{client}` sorted set of the client's pending ids (the per-client bound).
 *
 * The per-client bound spans people, so in Cluster it cannot share the person's slot: open() checks
 * the person (find or count), then holds a place for the client, then creates (checking again), and
 * gives the place back when it did not create. Of two racing opens of one call both may pass the
 * check, but only one creates: the second finds the first pending. A place is freed on decide and
 * cancel, else when the pending approval lapses.
 */
import type { RedisConnection } from '../redis/connection.js'
import { list, str } from '../redis/replies.js'
import { CANCEL_APPROVALS, CONSUME_APPROVAL, DECIDE_APPROVAL, OPEN_APPROVAL, PLACE_CLIENT_APPROVAL, TAKE_APPROVAL } from './scripts.js'
import { APPROVAL_KEEP_SEC, type ApprovalRecord, type ApprovalStatus, type ApprovalStore, type NewApproval, type OpenResult } from './types.js'

/** What the scripts keep and change (scripts.ts). */
interface ApprovalState {
  k: string
  c: string
  g: string
  r: 'once' | 'ttl'
  s: Exclude<ApprovalStatus, 'expired'>
  e: number
  d?: number
  a?: string
}

/** One key for the call an approval is bound to: JSON of the triple is unambiguous. */
function matchKey(clientId: string, grantId: string | null, binding: string): string {
  return JSON.stringify([clientId, grantId, binding])
}

/** The record as read: the opened JSON with the state's status, expiry and decision (`expired` computed). */
function recordOf(rawRecord: unknown, rawState: unknown, now: number): ApprovalRecord {
  const opened = JSON.parse(str(rawRecord)) as ApprovalRecord
  const st = JSON.parse(str(rawState)) as ApprovalState
  const e = Number(st.e)
  const lapsed = (st.s === 'pending' || st.s === 'approved') && now >= e
  return {
    ...opened,
    status: lapsed ? 'expired' : st.s,
    expiresAt: e,
    decidedAt: st.d === undefined ? null : Number(st.d),
    decidedAcr: typeof st.a === 'string' ? st.a : null,
  }
}

/** A script's {record, state} reply, or null for nil. */
function replyOf(reply: unknown, now: number): ApprovalRecord | null {
  if (reply === null || reply === undefined) return null
  const [rec, st] = list(reply)
  return recordOf(rec, st, now)
}

export class RedisApprovals implements ApprovalStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  #personKeys(sub: string): string[] {
    return [this.#r.key('appr', sub), this.#r.key('apprs', sub)]
  }

  #idKey(id: string): string {
    return this.#r.key('apprid', id)
  }

  #grantKey(grantId: string): string {
    return this.#r.key('apprg', grantId)
  }

  #clientKey(clientId: string): string {
    return this.#r.key('apprc', clientId)
  }

  async open(approval: NewApproval, now: number, maxPerPerson: number, maxPerClient: number): Promise<OpenResult> {
    const r = this.#r
    const record: ApprovalRecord = { ...approval, status: 'pending', createdAt: now, decidedAt: null, decidedAcr: null }
    const state: ApprovalState = {
      k: matchKey(approval.clientId, approval.grantId, approval.binding),
      c: approval.clientId,
      g: approval.grantId ?? '',
      r: approval.subject.kind === 'mcp_tool' ? approval.subject.reuse : 'once',
      s: 'pending',
      e: approval.expiresAt,
    }
    const keys = this.#personKeys(approval.sub)
    const args = (phase: 'check' | 'create') => [
      approval.id,
      JSON.stringify(record),
      JSON.stringify(state),
      state.k,
      now,
      maxPerPerson,
      APPROVAL_KEEP_SEC,
      phase,
    ]
    const found = (reply: unknown): OpenResult | null => {
      const [outcome, rec, st] = list(reply)
      if (outcome === 'too_many') return { outcome: 'too_many' }
      if (outcome === 'pending' || outcome === 'created') return { outcome, record: recordOf(rec, st, now) }
      return null
    }
    return r.do(async (c) => {
      const checked = found(await r.eval(c, OPEN_APPROVAL, keys, args('check')))
      if (checked !== null) return checked
      const clientKey = this.#clientKey(approval.clientId)
      if (Number(await r.eval(c, PLACE_CLIENT_APPROVAL, [clientKey], [approval.id, approval.expiresAt, now, maxPerClient])) !== 1)
        return { outcome: 'too_many' }
      // The indexes first: a record never exists that get() or cancelGrant() cannot reach.
      const keepMs = (approval.expiresAt + APPROVAL_KEEP_SEC - now) * 1000
      await c.set(this.#idKey(approval.id), approval.sub, 'PX', Math.max(1, keepMs))
      if (approval.grantId !== null) {
        const gk = this.#grantKey(approval.grantId)
        await c.sadd(gk, approval.sub)
        if ((await c.pttl(gk)) < keepMs) await c.pexpire(gk, Math.max(1, keepMs))
      }
      const made = found(await r.eval(c, OPEN_APPROVAL, keys, args('create')))
      if (made?.outcome !== 'created') await c.zrem(clientKey, approval.id)
      return made ?? { outcome: 'too_many' }
    })
  }

  async #subOf(id: string): Promise<string | null> {
    const v = await this.#r.do((c) => c.get(this.#idKey(id)))
    return v === null ? null : str(v)
  }

  async get(id: string, now: number): Promise<ApprovalRecord | null> {
    const sub = await this.#subOf(id)
    if (sub === null) return null
    const [recKey, stKey] = this.#personKeys(sub) as [string, string]
    const [rec, st] = await this.#r.do((c) => Promise.all([c.hget(recKey, id), c.hget(stKey, id)]))
    if (rec === null || st === null) return null
    const record = recordOf(rec, st, now)
    return now >= record.expiresAt + APPROVAL_KEEP_SEC ? null : record
  }

  async decide(
    id: string,
    sub: string,
    decision: 'approved' | 'denied',
    acr: string | null,
    approvedUntil: number,
    now: number,
  ): Promise<ApprovalRecord | null> {
    const r = this.#r
    const decided = replyOf(
      await r.do((c) => r.eval(c, DECIDE_APPROVAL, this.#personKeys(sub), [id, decision, acr ?? '', approvedUntil, now, APPROVAL_KEEP_SEC])),
      now,
    )
    if (decided !== null) await r.do((c) => c.zrem(this.#clientKey(decided.clientId), id))
    return decided
  }

  async consume(sub: string, clientId: string, grantId: string | null, binding: string, now: number): Promise<ApprovalRecord | null> {
    const r = this.#r
    return replyOf(await r.do((c) => r.eval(c, CONSUME_APPROVAL, this.#personKeys(sub), [matchKey(clientId, grantId, binding), now])), now)
  }

  async take(id: string, now: number): Promise<ApprovalRecord | null> {
    const sub = await this.#subOf(id)
    if (sub === null) return null
    const r = this.#r
    return replyOf(await r.do((c) => r.eval(c, TAKE_APPROVAL, this.#personKeys(sub), [id, now])), now)
  }

  async listForPerson(sub: string, now: number, limit: number): Promise<ApprovalRecord[]> {
    const [recKey, stKey] = this.#personKeys(sub) as [string, string]
    const [recs, states] = await this.#r.do((c) => Promise.all([c.hgetall(recKey), c.hgetall(stKey)]))
    const out: ApprovalRecord[] = []
    for (const [id, st] of Object.entries(states)) {
      const rec = recs[id]
      if (rec === undefined) continue
      const record = recordOf(rec, st, now)
      if (now < record.expiresAt + APPROVAL_KEEP_SEC) out.push(record)
    }
    return out.sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : 1)).slice(0, limit)
  }

  /** Cancel on one person's tag, then free the cancelled ones' client places. */
  async #cancel(sub: string, grantId: string, now: number): Promise<number> {
    const r = this.#r
    const flat = list(await r.do((c) => r.eval(c, CANCEL_APPROVALS, this.#personKeys(sub), [grantId, now]))).map(str)
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const id = flat[i] as string
      const clientId = flat[i + 1] as string
      await r.do((c) => c.zrem(this.#clientKey(clientId), id))
    }
    return flat.length / 2
  }

  async cancelGrant(grantId: string, now: number): Promise<number> {
    if (grantId === '') return 0
    const subs = (await this.#r.do((c) => c.smembers(this.#grantKey(grantId)))).map(str)
    let n = 0
    for (const sub of subs) n += await this.#cancel(sub, grantId, now)
    return n
  }

  async cancelPerson(sub: string, now: number): Promise<number> {
    return this.#cancel(sub, '', now)
  }
}
