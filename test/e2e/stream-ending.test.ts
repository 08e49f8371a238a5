/**
 * Issue #30 item 6 across instances: two `bin/bearward` on one Redis. A
 * token revoked at instance A (at /revoke, or by a person withdrawing the
 * application on A's account page) ends the streams and WebSocket tunnels
 * it opened through instance B within a second; streams of other tokens go
 * on. The revocation reaches B by the store's pub/sub (src/store/revocation-list.ts).
 */
import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import { DEMO_PASSWORD, DEMO_SECRET } from '../helpers/as-config.js'
import type { RunningBin } from '../helpers/bin.js'
import { Browser, authorizeAsPerson, parseForms } from '../helpers/browser.js'
import { eventually } from '../helpers/http.js'
import { startRedis } from '../helpers/redis.js'
import { basic, form, revoke, serviceToken, startStorePair } from '../helpers/store-pair.js'
import { openSocket, openStream, startStreamingUpstream, within } from '../helpers/streams.js'

const LIMIT_MS = 1000
const CALLBACK = 'http://127.0.0.1:5555/callback'

/** A counter's value in an instance's /metrics (0 when the series is absent). */
async function metric(bin: RunningBin, series: string): Promise<number> {
  const text = await (await fetch(`${bin.admin}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

const REVOKED = 'bearward_exchanges_ended_total{reason="revoked"}'

t.test('a token revoked at instance A ends its streams at instance B within a second', async (t) => {
  const redis = await startRedis()
  const up = await startStreamingUpstream()
  const pair = await startStorePair({
    store: redis.url,
    upstream: up.url,
    cleanup: async () => {
      await up.close()
      await redis.stop()
    },
  })
  t.teardown(() => pair.stop())
  const { a, b } = pair

  await t.test('revoked by jti at A: the SSE stream at B is cut, the other goes on', async (t) => {
    const doomed = await serviceToken(a)
    const kept = await serviceToken(a)
    const stream = await openStream(`${b.url}/orders/events`, doomed)
    const other = await openStream(`${b.url}/orders/events`, kept)
    t.equal(stream.status, 200)
    t.equal(other.status, 200)
    await stream.chunkAfter(performance.now())
    const upstream = up.streams.at(-2)

    const sentAt = performance.now()
    t.equal((await revoke(a, doomed)).status, 200)
    // A answers once the revocation is stored and published: from then on it can reach B.
    const storedAt = performance.now()
    t.ok(await within(stream.ended, 3 * LIMIT_MS), 'it ends')
    const ms = (stream.endedAt ?? 0) - storedAt
    t.ok(ms < LIMIT_MS, `revocation stored at A to the end of the stream at B: ${ms.toFixed(1)} ms (limit ${LIMIT_MS} ms)`)
    t.comment(`revocation at A -> stream at B ended: ${((stream.endedAt ?? 0) - sentAt).toFixed(1)} ms from the request, ${ms.toFixed(1)} ms from A's answer`)
    t.notOk(stream.complete, 'the chunked body is cut')
    t.ok(await eventually(() => upstream?.closedAt != null, LIMIT_MS), 'the upstream saw its connection close')
    const endedAt = stream.endedAt ?? 0
    t.ok((await other.chunkAfter(endedAt)) > endedAt, 'the stream of the unrevoked token still delivers')
    t.equal(await metric(b, REVOKED), 1, 'B counts it')
    t.equal(await metric(a, REVOKED), 0, 'A had no stream of that token')
    const line = await b.waitForLog((l) => l.msg === 'open exchange ended: its access token was revoked')
    t.match(line, { level: 30, route: 'orders', reason: 'revoked' })
    other.close()
    await other.ended
  })

  await t.test('withdrawn on A’s account page: the stream and the WebSocket at B end', async (t) => {
    const person = new Browser()
    const verifier = randomBytes(32).toString('base64url')
    const authorize = `${a.url}/authorize?${new URLSearchParams({
      response_type: 'code',
      client_id: 'web',
      redirect_uri: CALLBACK,
      scope: 'openid orders:read',
      state: 's1',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    })}`
    const callback = await authorizeAsPerson(person, authorize, { username: 'alice', password: DEMO_PASSWORD })
    const exchanged = await form(
      `${a.url}/token`,
      { grant_type: 'authorization_code', code: callback.searchParams.get('code') ?? '', redirect_uri: CALLBACK, code_verifier: verifier },
      basic('web', DEMO_SECRET),
    )
    t.equal(exchanged.status, 200)
    const alice = ((await exchanged.json()) as { access_token: string }).access_token
    const kept = await serviceToken(a)
    const before = await metric(b, REVOKED)
    const stream = await openStream(`${b.url}/orders/events`, alice)
    const ws = await openSocket(`${b.url}/orders/ws`, alice)
    const other = await openSocket(`${b.url}/orders/ws`, kept)
    t.equal(stream.status, 200)
    await ws.messageAfter(performance.now())

    const page = await person.get(`${a.url}/account`)
    const withdraw = parseForms(await page.text(), `${a.url}/account`).find((f) => f.fields.client_id === 'web')
    if (withdraw === undefined) throw new Error('no withdraw form for web')
    t.equal((await person.submit(withdraw)).status, 303)
    // The page answers once the grants are revoked in the store and published.
    const withdrawnAt = performance.now()
    t.ok(await within(Promise.all([stream.ended, ws.closed]), 3 * LIMIT_MS), 'both end')
    for (const [what, at] of [
      ['stream', stream.endedAt],
      ['WebSocket', ws.closedAt],
    ] as const) {
      const ms = (at ?? 0) - withdrawnAt
      t.ok(ms < LIMIT_MS, `withdrawal stored at A to the end of the ${what} at B: ${ms.toFixed(1)} ms`)
    }
    t.equal(ws.code, 1008, 'the WebSocket is closed with 1008 (policy violation)')
    t.equal(ws.reason, 'access token revoked')
    const closedAt = ws.closedAt ?? 0
    t.ok((await other.messageAfter(closedAt)) > closedAt, 'the WebSocket of another token still delivers')
    t.equal((await metric(b, REVOKED)) - before, 2, 'B counts both')
    other.close()
    await other.closed
  })
})
