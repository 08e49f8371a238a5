/**
 * The registry of open exchanges (src/gateway/open-exchanges.ts) on its own:
 * which exchanges a revocation or an expiry ends, that closed ones are
 * forgotten, and that a retired registry lets go of the revocation feed only
 * when its last exchange closed.
 */
import t from 'tap'
import { type Clock, ManualClock, systemClock } from '../../src/clock.js'
import { eventually } from '../helpers/http.js'
import { createLogger } from '../../src/log.js'
import { Metrics } from '../../src/metrics.js'
import type { RevocationEntry } from '../../src/store/types.js'
import { type EndReason, OpenExchanges } from '../../src/gateway/open-exchanges.js'
import type { TokenIdentity } from '../../src/gateway/token-identity.js'

/** A revocation feed the test drives. */
class Feed {
  readonly listeners = new Set<(e: RevocationEntry) => void>()
  readonly revoked = new Set<string>()
  isRevoked(jti: string | null, grantId: string | null): boolean {
    return (jti !== null && this.revoked.has(`jti:${jti}`)) || (grantId !== null && this.revoked.has(`grant:${grantId}`))
  }
  onRevoked(listener: (e: RevocationEntry) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
  revoke(e: RevocationEntry): void {
    this.revoked.add(`${e.kind}:${e.id}`)
    for (const l of this.listeners) l(e)
  }
}

/** An exchange that records how it was ended. */
class Target {
  ended: EndReason[] = []
  endExchange(reason: EndReason): void {
    this.ended.push(reason)
  }
}

const lines: Record<string, unknown>[] = []
const logs = {
  log: createLogger('info', {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as Record<string, unknown>)
    },
  }),
}

function identity(over: Partial<TokenIdentity> = {}): TokenIdentity {
  return {
    issuerId: 'self',
    issuer: 'https://as',
    sub: 'alice',
    clientId: 'web',
    scopes: [],
    jti: 'j1',
    grantId: 'g1',
    exp: 2_000_000_000,
    jkt: null,
    x5t: null,
    claims: {},
    ...over,
  }
}

function setup(graceSec = 30, clock: Clock = new ManualClock(1_700_000_000_000)) {
  const feed = new Feed()
  const metrics = new Metrics()
  const registry = new OpenExchanges({ clock, revocations: feed, metrics, graceSec })
  return { feed, metrics, registry, clock }
}

t.test('a jti revocation ends every exchange of that token and no other', async (t) => {
  const { feed, metrics, registry } = setup()
  const [a1, a2, a3, b] = [new Target(), new Target(), new Target(), new Target()]
  registry.open(a1, identity({ jti: 'a', grantId: null }), 'orders', logs)
  const middle = registry.open(a2, identity({ jti: 'a', grantId: null }), 'orders', logs)
  registry.open(a3, identity({ jti: 'a', grantId: null }), 'orders', logs)
  registry.open(b, identity({ jti: 'b', grantId: null }), 'orders', logs)
  middle.close()
  t.equal(registry.size, 3, 'a closed exchange is forgotten')
  feed.revoke({ kind: 'jti', id: 'a', exp: 0 })
  t.same([a1.ended, a2.ended, a3.ended, b.ended], [['revoked'], [], ['revoked'], []])
  t.equal(registry.size, 1)
  t.equal(metrics.exchangesEnded.get({ reason: 'revoked' }), 2)
  feed.revoke({ kind: 'jti', id: 'a', exp: 0 })
  t.same(a1.ended, ['revoked'], 'told again, nothing is ended twice')
  t.match(lines.at(-1), { level: 30, route: 'orders', reason: 'revoked', msg: 'open exchange ended: its access token was revoked' })
})

t.test('a grant revocation ends the exchanges of every token of the grant', async (t) => {
  const { feed, registry } = setup()
  const [x, y, z] = [new Target(), new Target(), new Target()]
  registry.open(x, identity({ jti: 'x', grantId: 'fam' }), 'orders', logs)
  registry.open(y, identity({ jti: 'y', grantId: 'fam' }), 'api', logs)
  registry.open(z, identity({ jti: 'z', grantId: 'other' }), 'orders', logs)
  feed.revoke({ kind: 'jti', id: 'fam', exp: 0 })
  t.same([x.ended, y.ended], [[], []], 'a jti entry does not match a grant id')
  feed.revoke({ kind: 'grant', id: 'fam', exp: 0 })
  t.same([x.ended, y.ended, z.ended], [['revoked'], ['revoked'], []])
  feed.revoke({ kind: 'jti', id: 'x', exp: 0 })
  t.same(x.ended, ['revoked'], 'an ended exchange is gone from its other lists too')
})

t.test('a token revoked before it was registered is ended at once', async (t) => {
  const { feed, registry } = setup()
  feed.revoke({ kind: 'grant', id: 'g1', exp: 0 })
  const late = new Target()
  const entry = registry.open(late, identity(), 'orders', logs)
  t.same(late.ended, ['revoked'])
  t.equal(registry.size, 0)
  entry.close()
  t.equal(registry.size, 0, 'closing it afterwards changes nothing')
})

t.test('exchanges end at exp plus grace, the earliest first', async (t) => {
  const clock = new ManualClock(1_700_000_000_000)
  const { metrics, registry } = setup(1, clock)
  const nowSec = 1_700_000_000
  const [soon, later] = [new Target(), new Target()]
  registry.open(later, identity({ jti: 'l', exp: nowSec + 60 }), 'orders', logs)
  registry.open(soon, identity({ jti: 's', exp: nowSec - 1 }), 'orders', logs)
  // Due already: the timer is armed with no delay.
  t.ok(await eventually(() => soon.ended.length > 0, 1000), 'the due one ends')
  t.same([soon.ended, later.ended], [['expired'], []])
  t.equal(metrics.exchangesEnded.get({ reason: 'expired' }), 1)
  t.equal(registry.size, 1)
})

t.test('the timer, woken for an exchange that closed meanwhile, arms for the next deadline still open', async (t) => {
  // Real time: the registry's one timer waits on it (deadlines are whole seconds, so this takes 1-2 s).
  const { registry } = setup(0, systemClock)
  const nowSec = Math.floor(Date.now() / 1000)
  const [gone, next, far] = [new Target(), new Target(), new Target()]
  const first = registry.open(gone, identity({ jti: 'g', exp: nowSec - 5 }), 'orders', logs)
  registry.open(far, identity({ jti: 'f', exp: nowSec + 3600 }), 'orders', logs)
  registry.open(next, identity({ jti: 'n', exp: nowSec + 1 }), 'orders', logs)
  // Closed before its timer (armed with no delay) fires: the timer finds nothing due and re-arms.
  first.close()
  t.ok(await eventually(() => next.ended.length > 0, 4000), 'the next deadline still open ends when due')
  t.ok(Date.now() >= (nowSec + 1) * 1000, 'not before it')
  t.same([gone.ended, next.ended, far.ended], [[], ['expired'], []], 'the closed one is not ended, the far one is not reached')
  t.equal(registry.size, 1)
})

t.test('a revocation among many open exchanges ends exactly those of its token or grant', async (t) => {
  const { feed, metrics, registry } = setup()
  const targets = Array.from({ length: 300 }, () => new Target())
  const entries = targets.map((target, i) =>
    registry.open(target, identity({ jti: `j${i % 30}`, grantId: `g${i % 7}`, exp: 2_000_000_000 + i }), 'orders', logs),
  )
  // Some close on their own first, as finished requests do.
  for (let i = 0; i < entries.length; i += 4) entries[i]?.close()
  feed.revoke({ kind: 'jti', id: 'j3', exp: 0 })
  const byJti = targets.flatMap((target, i) => (target.ended.length > 0 ? [i] : []))
  t.same(
    byJti,
    targets.flatMap((_, i) => (i % 30 === 3 && i % 4 !== 0 ? [i] : [])),
    'every open exchange of jti j3, and no other',
  )
  feed.revoke({ kind: 'grant', id: 'g5', exp: 0 })
  const ended = targets.flatMap((target, i) => (target.ended.length > 0 ? [i] : []))
  t.same(
    ended,
    targets.flatMap((_, i) => ((i % 30 === 3 || i % 7 === 5) && i % 4 !== 0 ? [i] : [])),
    'then every open exchange of grant g5 as well',
  )
  t.ok(
    targets.every((target) => target.ended.length <= 1),
    'no exchange is ended twice',
  )
  t.equal(metrics.exchangesEnded.get({ reason: 'revoked' }), ended.length)
  t.equal(registry.size, 300 - 75 - ended.length)
})

t.test('a retired registry stays subscribed until its last exchange closes', async (t) => {
  const { feed, registry } = setup()
  const entry = registry.open(new Target(), identity(), 'orders', logs)
  registry.retire()
  t.equal(feed.listeners.size, 1, 'an open exchange keeps the subscription')
  entry.close()
  t.equal(feed.listeners.size, 0, 'released with the last one')
  const idle = setup()
  idle.registry.retire()
  t.equal(idle.feed.listeners.size, 0, 'an empty registry lets go at once')
})
