/**
 * Authorization codes on Redis.
 *
 * Keys: `p code:{hash}` hash {r: record JSON, st: i|u, gid, exp, dl: deadline ms}.
 */
import type { RedisConnection } from '../redis/connection.js'
import { list, str } from '../redis/replies.js'
import { LINK_CODE_GRANT, TAKE_CODE } from './scripts.js'
import type { CodeRecord, CodeStore, TakeCodeResult } from './types.js'

export class RedisCodes implements CodeStore {
  readonly #r: RedisConnection

  constructor(r: RedisConnection) {
    this.#r = r
  }

  async put(codeHash: string, record: CodeRecord, ttlSec: number): Promise<void> {
    const r = this.#r
    const deadlineMs = Math.max(r.clock.now() + ttlSec * 1000, record.expiresAt * 1000)
    await r.do((c) =>
      r.putHash(c, r.key('code', codeHash), r.ttlMs(deadlineMs), {
        r: JSON.stringify(record),
        st: 'i',
        exp: record.expiresAt,
        dl: deadlineMs,
      }),
    )
  }

  async take(codeHash: string): Promise<TakeCodeResult> {
    const r = this.#r
    const reply = list(await r.do((c) => r.eval(c, TAKE_CODE, [r.key('code', codeHash)], [r.clock.now()])))
    const status = str(reply[0])
    if (status === 'taken') return { status, record: JSON.parse(str(reply[1])) as CodeRecord }
    if (status === 'used') {
      const gid = str(reply[2])
      return { status, record: JSON.parse(str(reply[1])) as CodeRecord, grantId: gid === '' ? null : gid }
    }
    return { status: 'missing' }
  }

  async linkGrant(codeHash: string, grantId: string): Promise<void> {
    const r = this.#r
    await r.do((c) => r.eval(c, LINK_CODE_GRANT, [r.key('code', codeHash)], [grantId]))
  }
}
