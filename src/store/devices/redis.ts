/**
 * Device authorization (RFC 8628) on Redis.
 *
 * Keys: `p dev:{hash}` hash of the DeviceRecord fields (the approving
 * person's amr/acr as one JSON field `signIn`); `p ucode:{code}` hash
 * {d: device hash, e: expires ms}.
 */
import type { Arg, RedisConnection } from '../redis/connection.js'
import type { Client } from '../redis/link.js'
import { list, num, pairs, str } from '../redis/replies.js'
import { CLAIM_USER_CODE, DECIDE_DEVICE, POLL_DEVICE } from './scripts.js'
import type { DeviceDecision, DeviceRecord, DeviceStatus, DeviceStore, PollResult } from './types.js'

const DEVICE_STATUSES: readonly DeviceStatus[] = ['pending', 'approved', 'denied', 'consumed']

/** Build a DeviceRecord from the device hash's fields (HGETALL as a flat list or object). */
function decodeDevice(fields: Record<string, string>): DeviceRecord | null {
  const status = fields.status as DeviceStatus | undefined
  if (!status || !DEVICE_STATUSES.includes(status)) return null
  return {
    clientId: fields.clientId ?? '',
    userCode: fields.userCode ?? '',
    scope: fields.scope ?? '',
    status,
    sub: fields.sub ?? null,
    authTime: fields.authTime === undefined ? null : Number(fields.authTime),
    expiresAt: Number(fields.expiresAt),
    intervalSec: Number(fields.intervalSec),
    lastPollMs: Number(fields.lastPollMs),
    ...(fields.decidedAtMs === undefined ? {} : { decidedAtMs: Number(fields.decidedAtMs) }),
    ...deviceSignIn(fields.signIn),
  }
}

/** The approving person's amr/acr, kept as one JSON field of the device hash (absent before approval). */
function deviceSignIn(raw: string | undefined): { amr?: string[]; acr?: string } {
  if (raw === undefined || raw === '') return {}
  const v = JSON.parse(raw) as { amr?: unknown; acr?: unknown }
  const amr = Array.isArray(v.amr) && v.amr.every((m) => typeof m === 'string') ? { amr: v.amr as string[] } : {}
  return { ...amr, ...(typeof v.acr === 'string' ? { acr: v.acr } : {}) }
}

export class RedisDevices implements DeviceStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async put(deviceHash: string, record: DeviceRecord): Promise<boolean> {
    const r = this.#r
    const expMs = record.expiresAt * 1000
    const ttl = r.ttlMs(expMs)
    return r.do(async (c) => {
      const claimed = num(await r.eval(c, CLAIM_USER_CODE, [r.key('ucode', record.userCode)], [deviceHash, expMs, r.clock.now(), ttl]))
      if (claimed !== 1) return false
      const fields: Record<string, Arg> = {
        clientId: record.clientId,
        userCode: record.userCode,
        scope: record.scope,
        status: record.status,
        expiresAt: record.expiresAt,
        intervalSec: record.intervalSec,
        lastPollMs: record.lastPollMs,
      }
      if (record.sub !== null) fields.sub = record.sub
      if (record.authTime !== null) fields.authTime = record.authTime
      await r.putHash(c, r.key('dev', deviceHash), ttl, fields)
      return true
    })
  }

  /** The device hash a live user code points to, or null. */
  async #deviceHashOf(c: Client, userCode: string): Promise<string | null> {
    const [d, e] = await c.hmget(this.#r.key('ucode', userCode), 'd', 'e')
    return d && e && this.#r.clock.now() < Number(e) ? d : null
  }

  async getByUserCode(userCode: string): Promise<{ deviceHash: string; record: DeviceRecord } | null> {
    const r = this.#r
    return r.do(async (c) => {
      const deviceHash = await this.#deviceHashOf(c, userCode)
      if (deviceHash === null) return null
      const record = decodeDevice(await c.hgetall(r.key('dev', deviceHash)))
      if (!record || r.clock.now() >= record.expiresAt * 1000) return null
      return { deviceHash, record }
    })
  }

  async decide(userCode: string, decision: DeviceDecision): Promise<boolean> {
    const r = this.#r
    return r.do(async (c) => {
      const deviceHash = await this.#deviceHashOf(c, userCode)
      if (deviceHash === null) return false
      const args: Arg[] = decision.approved ? ['1', decision.sub, decision.authTime] : ['0', '', '']
      const signIn = decision.approved ? JSON.stringify({ amr: decision.amr, acr: decision.acr }) : ''
      return num(await r.eval(c, DECIDE_DEVICE, [r.key('dev', deviceHash)], [...args, r.clock.now(), signIn])) === 1
    })
  }

  async poll(deviceHash: string, nowMs: number): Promise<PollResult> {
    const r = this.#r
    const reply = list(await r.do((c) => r.eval(c, POLL_DEVICE, [r.key('dev', deviceHash)], [nowMs, r.clock.now()])))
    const status = str(reply[0])
    const record = reply.length > 1 ? decodeDevice(pairs(list(reply[1]))) : null
    if (!record) return { status: 'missing' }
    if (status === 'slow_down' || status === 'pending' || status === 'denied' || status === 'approved') {
      return { status, record }
    }
    // 'consumed' is never returned by the script for a live poll; treat anything else as gone.
    return { status: 'missing' }
  }
}
