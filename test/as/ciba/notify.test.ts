/**
 * A CIBA request is told like a held MCP call: the top-level `approvals.notify` gets a signed event
 * naming the approval page and the binding message (never the auth_req_id), and the top-level bounds
 * (`approvals.max_pending_per_person`) hold at /bc-authorize too.
 */
import t from 'tap'
import { notificationSignature, SIGNATURE_HEADER } from '../../../src/as/approvals/notify.js'
import { startAs } from '../../helpers/as-back.js'
import { approvalIdOf, bcAuthorize, cibaClients, startReceiver } from '../../helpers/ciba.js'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

const SECRET = 'notify-secret-0123456789abcdefghijklmnop'

t.test('CIBA requests are notified, and bounded by the top-level approvals settings', async (t) => {
  const pings = await startReceiver()
  t.teardown(pings.close)
  const events: Array<{ signature: string; body: string }> = []
  const waiting: Array<() => void> = []
  const hook = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      events.push({ signature: String(req.headers[SIGNATURE_HEADER]), body: Buffer.concat(chunks).toString('utf8') })
      res.statusCode = 204
      res.end()
      waiting.shift()?.()
    })
  })
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => hook.close(() => resolve())))
  const hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`
  const h = await startAs({
    clientsExtra: await cibaClients(pings.url),
    top: `approvals: { notify: { url: "${hookUrl}", secret: "${SECRET}" }, max_pending_per_person: 2 }`,
  })
  t.teardown(() => h.close())

  const told = new Promise<void>((resolve) => waiting.push(resolve))
  const started = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice', binding_message: 'Pay 500 EUR' })
  t.equal(started.status, 200, started.text)
  const authReqId = String(started.json?.auth_req_id)
  await told
  const event = JSON.parse(events[0]?.body ?? '{}') as Record<string, unknown>
  t.equal(event.type, 'approval.requested')
  t.equal(event.kind, 'ciba')
  t.equal(event.binding_message, 'Pay 500 EUR')
  t.equal(event.url, `${h.issuer}/approve?id=${approvalIdOf(authReqId)}`)
  t.notOk(events[0]?.body.includes(authReqId.split('.')[1] as string), 'never the auth_req_id')
  const ts = Number(/t=(\d+)/.exec(events[0]?.signature ?? '')?.[1])
  t.equal(events[0]?.signature, notificationSignature(SECRET, ts, events[0]?.body ?? ''), 'signed with the secret')

  t.equal((await bcAuthorize(h, { scope: 'openid', login_hint: 'alice' })).status, 200)
  const third = await bcAuthorize(h, { scope: 'openid', login_hint: 'alice' })
  t.equal(third.status, 403, 'max_pending_per_person: 2')
  t.equal(third.json?.error, 'access_denied')
})
