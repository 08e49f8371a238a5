/**
 * The rapid-reset bound (CVE-2023-44487) per client address as well as per
 * connection (issue #38): a client that spreads its resets over several
 * connections, each under `max_resets`, still gets GOAWAY once the
 * address's total passes `max_resets_per_address`, and its upstream
 * exchanges stop being started; another address is not affected.
 */
import t from 'tap'
import { constants, type ClientHttp2Session } from 'node:http2'
import { startGateway, type Harness } from '../gateway/fixture.js'
import { eventually } from '../helpers/http.js'
import { h2Request, openSession } from '../helpers/http2.js'
import { resetBudgetKey } from '../../src/server/http2.js'

t.test('resets spread over connections from one address are counted together', async (t) => {
  const gw: Harness = await startGateway({
    routes: (up) => `
  - name: hang
    match: { path: /hang }
    upstream: ${up}
    public: true
  - name: public
    match: { path: /public }
    upstream: ${up}
    public: true
`,
    extra: 'http2: { cleartext: true, max_resets: 8, max_resets_per_address: 12, reset_window: 60s }',
    // /hang is never answered: each stream stays open at both ends until the client resets it.
    upstreamHandler: (req, res) => {
      if (!req.url?.startsWith('/hang')) res.end('ok')
    },
  })
  t.teardown(() => gw.close())

  const sessions: ClientHttp2Session[] = []
  t.teardown(() => {
    for (const s of sessions) s.destroy()
  })

  /**
   * `connections` connections, one after another, each resetting up to 6
   * streams (under max_resets, 8) and then closed by the client when
   * `closeEach` (the budget must outlive them) or left open; returns each
   * connection's resets and whether it got GOAWAY ENHANCE_YOUR_CALM.
   */
  async function spread(connections: number, closeEach: boolean): Promise<{ resets: number; goaway: boolean }[]> {
    const out: { resets: number; goaway: boolean }[] = []
    for (let c = 0; c < connections; c++) {
      const session = await openSession(gw.url)
      sessions.push(session)
      const mine = { resets: 0, goaway: false }
      out.push(mine)
      session.on('goaway', (code: number) => (mine.goaway = code === constants.NGHTTP2_ENHANCE_YOUR_CALM))
      for (let i = 0; i < 6 && !session.destroyed && !session.closed && !mine.goaway; i++) {
        const seen = gw.upstream.seen.length
        const stream = session.request({ ':path': `/hang/${c}-${i}` })
        stream.on('error', () => undefined)
        if (!(await eventually(() => gw.upstream.seen.length > seen || session.destroyed || session.closed, 2000, 1))) break
        if (session.destroyed || session.closed) break
        stream.close(constants.NGHTTP2_CANCEL)
        mine.resets++
      }
      if (closeEach && !session.destroyed) {
        const closed = new Promise<void>((resolve) => session.once('close', () => resolve()))
        session.destroy()
        await closed
      }
    }
    return out
  }

  const total = (runs: { resets: number }[]): number => runs.reduce((n, r) => n + r.resets, 0)

  await t.test('connections one after another, each closed by the client', async (t) => {
    // Per connection alone, 6 connections x 6 resets = 36 aborted exchanges and no GOAWAY.
    const runs = await spread(6, true)
    t.ok(await eventually(() => runs.some((r) => r.goaway)), 'GOAWAY ENHANCE_YOUR_CALM came')
    const first = runs.findIndex((r) => r.goaway)
    t.ok(first <= 2, `on the connection that passed the budget of 12 (connection ${first + 1})`)
    // A few resets may be in flight when GOAWAY goes out; every later connection goes at its first.
    t.ok(total(runs.slice(0, first + 1)) <= 12 + 4, `resets until then: ${runs.map((r) => r.resets).join(', ')}`)
    t.ok(
      runs.slice(first + 1).every((r) => r.resets <= 1 && r.goaway),
      'each later connection: one reset, then GOAWAY',
    )
    t.ok(await eventually(() => gw.logs.some((l) => l.includes('address reset too many streams'))), 'logged')
  })

  await t.test('within the window, a new connection of the address goes at its first reset', async (t) => {
    const runs = await spread(2, false)
    t.same(
      runs.map((r) => r.resets <= 1),
      [true, true],
      `one reset each at most (${runs.map((r) => r.resets).join(', ')})`,
    )
    t.ok(await eventually(() => runs.every((r) => r.goaway)), 'and GOAWAY')
  })

  // A new connection from the address may serve requests; its first reset within the window ends it.
  const fresh = await openSession(gw.url)
  sessions.push(fresh)
  const served = await h2Request(fresh, { ':path': '/public/after' })
  t.equal(served.status, 200, 'requests are still served')
})

t.test('the address a reset budget is kept for: IPv4, or an IPv6 /64 (one client holds it whole)', async (t) => {
  t.equal(resetBudgetKey('192.0.2.7'), '192.0.2.7')
  t.equal(resetBudgetKey('::ffff:192.0.2.7'), '192.0.2.7', 'IPv4-mapped reads as IPv4')
  t.equal(resetBudgetKey('::FFFF:192.0.2.7'), '192.0.2.7')
  const a = resetBudgetKey('2001:db8:1:2:a::1')
  t.equal(a, resetBudgetKey('2001:db8:1:2:b:c:d:e'), 'a new source address in the same /64 shares the budget')
  t.equal(a, resetBudgetKey('2001:0DB8:0001:0002::9'), 'however it is spelled')
  t.equal(a, resetBudgetKey('2001:db8:1:2::1%eth0'), 'a zone index changes nothing')
  t.not(a, resetBudgetKey('2001:db8:1:3::1'), 'another /64 is another client')
  t.equal(resetBudgetKey('::1'), resetBudgetKey('0:0:0:0:0:0:0:2'))
  t.not(resetBudgetKey('2001:db8::1'), resetBudgetKey('2001:db9::1'))
})
