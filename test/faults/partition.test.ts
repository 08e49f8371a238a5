/**
 * A network partition between one gateway instance and Redis (issue 16,
 * item 1). G1 reaches Redis through a TCP relay the test cuts; G2 is
 * connected directly. A token revoked through G2 while G1 is cut off must
 * never be forwarded by G1: G1 fails closed (503) within 1 s of the cut, and
 * once the link heals it serves again within 2 s and refuses the token whose
 * revocation message it missed.
 */
import t from 'tap'
import { performance } from 'node:perf_hooks'
import { drive, forwardedSeqs, startRig, until } from './rig.js'

// Real redis-servers and binaries under load on a 2-core machine shared with the rest of the
// suite: more than tap's default per-file timeout. Each step has its own bound.
t.setTimeout(300_000)

/** Bounds the issue sets; the measured figures are printed beside them. */
const FAIL_CLOSED_MS = 1000
const RECOVER_MS = 2000
/** A silent partition (no RST) is found by the heartbeat: 250 ms period + 750 ms deadline. */
const SILENT_DETECT_MS = 1500

const rig = await startRig(['relay', 'direct'])
t.teardown(() => rig.close())
const [g1, g2] = rig.instances
if (!g1?.relay || !g2) throw new Error('rig: two instances, the first behind a relay')
const relay = g1.relay

t.test('cut link (connections reset): G1 fails closed at once, forwards no revoked token, heals with the missed revocation', async (t) => {
  const revoked = await rig.token(g2)
  const live = await rig.token(g2)
  t.equal(await rig.status(g1, '/orders/warm', revoked), 200, 'G1 accepts the token before the partition')

  const load = drive(g1, { revoked, live }, { prefix: '/orders/cut', workers: 4, maxMs: 20_000 })
  t.teardown(() => load.stop())
  await load.more(50, 15_000)

  const cutAt = performance.now()
  relay.cut()
  await rig.revoke(g2, revoked)
  const revokedAt = performance.now()

  const firstClosed = await load.first((s) => s.sentAt >= cutAt && s.status === 503, 5000)
  const failClosedMs = firstClosed.doneAt - cutAt
  t.ok(failClosedMs < FAIL_CLOSED_MS, `G1 answers 503 (store_unavailable: closed) ${failClosedMs.toFixed(0)} ms after the cut (bound ${FAIL_CLOSED_MS} ms)`)
  t.equal(await rig.ready(g1), 503, "G1's /readyz agrees with its routes during the partition")
  t.equal(await rig.ready(g2), 200, 'G2 is unaffected')
  // Keep the load on G1 through the partition.
  await load.more(100, 15_000)

  const restoredAt = performance.now()
  relay.restore()
  const back = await load.first((s) => s.sentAt >= restoredAt && s.name === 'live' && s.status === 200, 10_000)
  const recoverMs = back.doneAt - restoredAt
  t.ok(recoverMs < RECOVER_MS, `G1 serves valid tokens again ${recoverMs.toFixed(0)} ms after the link heals (bound ${RECOVER_MS} ms)`)
  const shots = await load.stop()

  const sentAfterRevoke = new Set(shots.filter((s) => s.name === 'revoked' && s.sentAt >= revokedAt).map((s) => s.seq))
  const forwarded = [...forwardedSeqs(rig.upstream.seen, '/orders/cut', 'revoked')].filter((n) => sentAfterRevoke.has(n))
  t.equal(sentAfterRevoke.size > 30, true, `G1 was driven with the revoked token during the partition (${sentAfterRevoke.size} requests)`)
  t.equal(forwarded.length, 0, 'requests forwarded by G1 with the token revoked during the partition: 0')
  t.same(
    shots.filter((s) => s.name === 'revoked' && s.sentAt >= revokedAt && s.status === 200),
    [],
    'none of them was answered 200',
  )
  const partitionStatuses = new Set(shots.filter((s) => s.sentAt > firstClosed.doneAt && s.doneAt < restoredAt).map((s) => s.status))
  t.same([...partitionStatuses], [503], 'while cut off, every request got 503: the policy holds for the whole partition')

  t.equal(await rig.status(g1, '/orders/after', revoked), 401, 'after healing, G1 refuses the token whose revocation message it missed')
  t.equal(await rig.status(g1, '/orders/after', live), 200, 'and serves the valid one')
  t.equal(await rig.ready(g1), 200, '/readyz is ready again')
  t.comment(`partition (cut): fail closed ${failClosedMs.toFixed(0)} ms, recovered ${recoverMs.toFixed(0)} ms, forwarded revoked 0 of ${sentAfterRevoke.size}`)
})

t.test('cut link, new connections black-holed: recovery does not wait for a hung connect', async (t) => {
  const live = await rig.token(g2)
  const cutAt = performance.now()
  relay.cut({ newConnections: 'blackhole' })
  const closedAt = await until(async () => (await rig.status(g1, '/orders/bh', live)) === 503, 5000, 'G1 fails closed')
  t.ok(closedAt - cutAt < FAIL_CLOSED_MS, `fails closed ${(closedAt - cutAt).toFixed(0)} ms after the cut`)
  // Let a reconnect attempt hang in the black hole before healing.
  await until(async () => relay.open > 0, 5000, 'a reconnect attempt is held')
  const restoredAt = performance.now()
  relay.restore()
  const backAt = await until(async () => (await rig.status(g1, '/orders/bh', live)) === 200, 10_000, 'G1 serves again')
  t.ok(backAt - restoredAt < RECOVER_MS, `serves again ${(backAt - restoredAt).toFixed(0)} ms after the link heals`)
})

t.test(
  'silent partition (TCP black hole, no RST): the heartbeat finds it, nothing is forwarded once found, the missed revocation holds after healing',
  async (t) => {
    const revoked = await rig.token(g2)
    const live = await rig.token(g2)
    t.equal(await rig.status(g1, '/orders/warm', revoked), 200)
    const load = drive(g1, { revoked, live }, { prefix: '/orders/silent', workers: 4, maxMs: 20_000 })
    t.teardown(() => load.stop())
    await load.more(50, 15_000)

    const silencedAt = performance.now()
    relay.silence()
    await rig.revoke(g2, revoked)
    const firstClosed = await load.first((s) => s.sentAt >= silencedAt && s.status === 503, 5000)
    const detectMs = firstClosed.doneAt - silencedAt
    t.ok(detectMs < SILENT_DETECT_MS, `G1 finds the silent partition and fails closed after ${detectMs.toFixed(0)} ms (bound ${SILENT_DETECT_MS} ms)`)
    await load.more(100, 15_000)

    const restoredAt = performance.now()
    relay.restore()
    const back = await load.first((s) => s.sentAt >= restoredAt && s.name === 'live' && s.status === 200, 10_000)
    const recoverMs = back.doneAt - restoredAt
    t.ok(recoverMs < RECOVER_MS + 1000, `serves again ${recoverMs.toFixed(0)} ms after the link heals`)
    const shots = await load.stop()

    // Before the heartbeat found the silence, G1 could not know of the revocation: that window is the documented figure.
    const forwardedSeq = forwardedSeqs(rig.upstream.seen, '/orders/silent', 'revoked')
    const afterDetection = shots.filter((s) => s.name === 'revoked' && s.sentAt >= firstClosed.doneAt && forwardedSeq.has(s.seq))
    t.equal(afterDetection.length, 0, 'revoked-token requests forwarded after G1 found the partition: 0')
    const inWindow = shots.filter((s) => s.name === 'revoked' && s.sentAt >= silencedAt && s.sentAt < firstClosed.doneAt && forwardedSeq.has(s.seq))
    t.equal(await rig.status(g1, '/orders/after', revoked), 401, 'after healing, the revocation missed during the partition holds')
    t.comment(
      `partition (silent): detected ${detectMs.toFixed(0)} ms, recovered ${recoverMs.toFixed(0)} ms, forwarded in the detection window ${inWindow.length}`,
    )
  },
)
