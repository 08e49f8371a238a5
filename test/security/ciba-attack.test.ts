/**
 * An outside attacker's pass over /bc-authorize and the CIBA grant (issue #41): a registered client
 * tries to have another person (or another client's request) approve for it. Every refusal is
 * checked at the wire and in the store: nothing is waiting for anyone afterwards.
 */
import t from 'tap'
import { startAs } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'
import { auth, bcAuthorize, cibaClients, decide, poll, startReceiver } from '../helpers/ciba.js'

t.test('CIBA attacks', async (t) => {
  const receiver = await startReceiver()
  t.teardown(receiver.close)
  const h = await startAs({ clientsExtra: await cibaClients(receiver.url), asExtra: '  ciba: { ttl: 120s, interval: 5s }' })
  t.teardown(() => h.close())
  const pending = async (sub: string): Promise<number> => (await h.as.approvals.listForPerson(sub)).filter((a) => a.status === 'pending').length

  t.test('a login_hint spelt like a person but not their exact username or email names nobody', async (t) => {
    // Case, width (NFKC), surrounding space, a control, an invisible character: a lenient lookup would find alice.
    for (const hint of [
      'ALICE',
      'Alice',
      'ａｌｉｃｅ',
      ' alice',
      'alice ',
      'alice\u0000',
      'ali\u200Bce',
      'alice@example.com\u200B',
      'alice@exam\u0440le.com',
    ]) {
      const r = await bcAuthorize(h, { scope: 'openid', login_hint: hint })
      t.equal(r.status, 400, `${JSON.stringify(hint)}: 400`)
      t.equal(r.json?.error, 'unknown_user_id', `${JSON.stringify(hint)}: unknown_user_id`)
    }
    t.equal(await pending('alice'), 0, 'nothing waits for alice')
  })

  t.test('requested_expiry in any spelling but a plain positive integer is refused; a huge one is clamped', async (t) => {
    for (const value of ['-1', '+60', '60.0', '0x3c', ' 60', '60 ', '060', '１２０', '9999999999']) {
      const r = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', requested_expiry: value })
      t.equal(r.status, 400, `${JSON.stringify(value)}: 400`)
      t.equal(r.json?.error, 'invalid_request', `${JSON.stringify(value)}: invalid_request`)
    }
    t.equal(await pending('alice'), 0, 'nothing opened by a refused one')
    const clamped = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', requested_expiry: '999999999' })
    t.equal(clamped.status, 200, clamped.text)
    t.equal(clamped.json?.expires_in, 120, 'never beyond ciba.ttl')
    h.clock.advance(121_000)
    t.equal((await poll(h, String(clamped.json?.auth_req_id))).json?.error, 'expired_token', 'and it lapses at ciba.ttl')
  })

  t.test('one client authenticated, another named in the body: refused, nothing opened', async (t) => {
    const r = await reply(postForm(`${h.url}/bc-authorize`, { scope: 'openid', login_hint: 'alice', client_id: 'pinger' }, { authorization: auth('agent') }))
    t.ok(r.status === 400 || r.status === 401, `refused (${r.status})`)
    t.match(String(r.json?.error), /^invalid_(request|client)$/)
    t.equal(await pending('alice'), 0)
  })

  t.test('a request approved for one client cannot be redeemed by another, even with its whole auth_req_id', async (t) => {
    const started = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', client_notification_token: 'tok-1234567890' }, 'pinger')
    t.equal(started.status, 200, started.text)
    const authReqId = String(started.json?.auth_req_id)
    await decide(h, authReqId, 'approved')
    const stolen = await poll(h, authReqId, 'agent')
    t.equal(stolen.status, 400)
    t.equal(stolen.json?.error, 'invalid_grant', 'another client: invalid_grant')
    t.notOk(stolen.json?.access_token)
    const own = await poll(h, authReqId, 'pinger')
    t.equal(own.status, 200, 'the client it was issued to still gets its tokens')
  })

  t.test('a client without the ciba grant, or a wrong secret, opens nothing', async (t) => {
    const wrong = await reply(
      postForm(`${h.url}/bc-authorize`, { scope: 'openid', login_hint: 'alice' }, { authorization: `Basic ${Buffer.from('agent:nope').toString('base64')}` }),
    )
    t.equal(wrong.status, 401)
    t.equal(wrong.json?.error, 'invalid_client')
    t.equal(await pending('alice'), 0)
  })
})
