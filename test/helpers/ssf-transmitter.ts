/**
 * A Shared Signals transmitter for tests: an ES256 key whose JWKS it serves
 * on 127.0.0.1:0 (`jwksUri`; `jwksDown` answers 503), SETs signed with jose
 * (`set`), push delivery (`push`: POST to bearward's /signals/events) and an
 * RFC 8936 poll endpoint (`pollUrl`) that hands out `queue` and records
 * every poll request (`polls`) with its acknowledgements.
 */
import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose'
import type { ManualClock } from '../../src/clock.js'
import { closeServer, listen, reply, type Reply } from './http.js'

export const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/'
export const RISC = 'https://schemas.openid.net/secevent/risc/event-type/'

export interface SetOptions {
  /** The event type URI (default CAEP session-revoked) and its body. */
  event?: string
  body?: Record<string, unknown>
  /** `sub_id` (default none: the body's `subject` or nothing). */
  subId?: Record<string, unknown>
  iss?: string
  aud?: string | string[]
  jti?: string
  /** Seconds relative to the clock's now (default 0). */
  iatOffset?: number
  omit?: Array<'iat' | 'jti' | 'events'>
  typ?: string | null
  /** Sign with another key (forged) or another alg. */
  key?: CryptoKey
  kid?: string
}

export interface PollRequest {
  ack: string[]
  setErrs: Record<string, { err: string; description: string }>
  maxEvents: number
  returnImmediately: boolean
  authorization: string | undefined
}

export class TestTransmitter {
  readonly issuer: string
  readonly audience: string
  readonly #clock: ManualClock
  #key!: CryptoKey
  #jwk!: JWK
  #server!: Server
  url = ''
  jwksDown = false
  pollDown = false
  /** SETs the poll endpoint hands out, by jti, until acknowledged. */
  readonly queue = new Map<string, string>()
  readonly polls: PollRequest[] = []
  jwksFetches = 0

  private constructor(issuer: string, audience: string, clock: ManualClock) {
    this.issuer = issuer
    this.audience = audience
    this.#clock = clock
  }

  static async start(o: { issuer: string; audience: string; clock: ManualClock }): Promise<TestTransmitter> {
    const t = new TestTransmitter(o.issuer, o.audience, o.clock)
    const { privateKey, publicKey } = await generateKeyPair('ES256')
    t.#key = privateKey
    t.#jwk = { ...(await exportJWK(publicKey)), kid: 'tx-1', alg: 'ES256', use: 'sig' }
    t.#server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        if (req.url === '/jwks') {
          t.jwksFetches++
          if (t.jwksDown) {
            res.writeHead(503).end()
            return
          }
          res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' }).end(JSON.stringify({ keys: [t.#jwk] }))
          return
        }
        if (req.url === '/poll' && req.method === 'POST') {
          if (t.pollDown) {
            res.writeHead(503).end()
            return
          }
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Omit<PollRequest, 'authorization'>
          t.polls.push({ ...body, setErrs: body.setErrs ?? {}, authorization: req.headers.authorization })
          for (const jti of [...body.ack, ...Object.keys(body.setErrs ?? {})]) t.queue.delete(jti)
          const sets = Object.fromEntries([...t.queue].slice(0, body.maxEvents))
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sets, moreAvailable: t.queue.size > body.maxEvents }))
          return
        }
        res.writeHead(404).end()
      })
    })
    t.url = (await listen(t.#server)).url
    return t
  }

  get jwksUri(): string {
    return `${this.url}/jwks`
  }

  get pollUrl(): string {
    return `${this.url}/poll`
  }

  /** A SET as the transmitter signs it, with the test's changes. */
  async set(o: SetOptions = {}): Promise<{ jwt: string; jti: string }> {
    const jti = o.jti ?? randomUUID()
    const claims: Record<string, unknown> = {
      iss: o.iss ?? this.issuer,
      aud: o.aud ?? this.audience,
      jti,
      iat: Math.floor(this.#clock.now() / 1000) + (o.iatOffset ?? 0),
      events: { [o.event ?? `${CAEP}session-revoked`]: o.body ?? {} },
    }
    if (o.subId !== undefined) claims.sub_id = o.subId
    for (const name of o.omit ?? []) delete claims[name]
    const header: Record<string, unknown> = { alg: 'ES256', kid: o.kid ?? 'tx-1' }
    if (o.typ !== null) header.typ = o.typ ?? 'secevent+jwt'
    const jwt = await new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(o.key ?? this.#key)
    return { jwt, jti }
  }

  /** Push `jwt` to `endpoint` as RFC 8935 says. */
  push(endpoint: string, jwt: string, contentType = 'application/secevent+jwt'): Promise<Reply> {
    return reply(fetch(endpoint, { method: 'POST', headers: { 'content-type': contentType, accept: 'application/json' }, body: jwt }))
  }

  close(): Promise<void> {
    return closeServer(this.#server)
  }
}

/** An unsecured JWS (`alg: none`) with the given claims: what an attacker sends without a key. */
export function unsignedSet(claims: Record<string, unknown>): string {
  const enc = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')
  return `${enc({ alg: 'none', typ: 'secevent+jwt' })}.${enc(claims)}.`
}
