/**
 * The CIBA tests' parts (test/as/ciba/): two CIBA clients (`agent` polls, `pinger` is pinged at a
 * receiver the test runs), the requests a client sends, and the person's decision through the
 * approval desk (what the approval page's form calls).
 */
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { basic, type Harness } from './as-back.js'
import { basic as basicAuth } from './client-auth.js'
import { postForm, reply, type Reply } from './http.js'
import { testSecretHash } from './secret-hashes.js'

export const CIBA = 'urn:openid:params:grant-type:ciba'
const AGENT_SECRET = 'agent-secret-0123456789abcdefghijklmnopqrs'
const PINGER_SECRET = 'pinger-secret-0123456789abcdefghijklmnopq'

export interface Ping {
  authorization: string | undefined
  contentType: string | undefined
  body: Record<string, unknown>
}

/** A client's notification endpoint: records each POST, answers 204 (or `status`). */
export async function startReceiver(): Promise<{ url: string; pings: Ping[]; next(): Promise<Ping>; status: number; close(): Promise<void> }> {
  const pings: Ping[] = []
  const waiting: Array<(p: Ping) => void> = []
  const state = { status: 204 }
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const ping: Ping = {
        authorization: req.headers.authorization,
        contentType: req.headers['content-type'],
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
      }
      res.statusCode = state.status
      res.end()
      if (state.status >= 300) return
      pings.push(ping)
      waiting.shift()?.(ping)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/ciba/ping`,
    pings,
    next: () => new Promise<Ping>((resolve) => waiting.push(resolve)),
    get status() {
      return state.status
    },
    set status(v: number) {
      state.status = v
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

export async function cibaClients(pingUrl: string): Promise<string> {
  const [agent, pinger] = await Promise.all([testSecretHash(AGENT_SECRET), testSecretHash(PINGER_SECRET)])
  return `    - { client_id: agent, name: Order agent, type: confidential, secret_hash: "${agent}", grant_types: [ciba, refresh_token], scopes: [openid, profile, email, orders:read] }
    - client_id: pinger
      type: confidential
      secret_hash: "${pinger}"
      grant_types: [ciba]
      scopes: [openid, orders:read]
      backchannel_token_delivery_mode: ping
      backchannel_client_notification_endpoint: "${pingUrl}"
`
}

export const auth = (clientId: string): string =>
  clientId === 'agent' ? basicAuth('agent', AGENT_SECRET) : clientId === 'pinger' ? basicAuth('pinger', PINGER_SECRET) : basic(clientId)

export function bcAuthorize(h: Harness, params: Record<string, string>, clientId = 'agent'): Promise<Reply> {
  return reply(postForm(`${h.url}/bc-authorize`, params, { authorization: auth(clientId) }))
}

export function poll(h: Harness, authReqId: string, clientId = 'agent'): Promise<Reply> {
  return reply(postForm(`${h.url}/token`, { grant_type: CIBA, auth_req_id: authReqId }, { authorization: auth(clientId) }))
}

/** The approval an auth_req_id names (its first part). */
export function approvalIdOf(authReqId: string): string {
  return authReqId.split('.')[0] as string
}

export async function decide(h: Harness, authReqId: string, decision: 'approved' | 'denied', sub = 'alice'): Promise<void> {
  const record = await h.as.approvals.decide(approvalIdOf(authReqId), decision, { sub, acr: 'mfa', address: null, userAgent: null }, 120)
  if (record === null) throw new Error('the decision was refused')
}
