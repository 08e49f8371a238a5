/**
 * bearward as a Shared Signals transmitter (SSF 1.0, docs/signals.md): its
 * metadata, the stream management endpoints for receivers (clients holding a
 * client-credentials token of scope `ssf:stream`, one stream each), and the
 * events: CAEP session-revoked when the session module ends a person's
 * sessions (src/as/sessions), CAEP credential-change when a person adds or
 * removes a factor (src/as/credential-changes.ts). A stream hears only of
 * people who hold a grant with its receiver's client.
 */
import { SIGNALS_PATHS } from '../../config/own-paths.js'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AsContext } from '../../as/context.js'
import type { CredentialChange } from '../../as/credential-changes.js'
import type { SessionEndReason, SessionsEnded } from '../../as/sessions/session-ends.js'
import { epochSeconds } from '../../clock.js'
import type { SignalTransmitterOutConfig } from '../../config/validated-config.js'
import { randomToken } from '../../crypto/random.js'
import { Conflict, InsufficientScope, InvalidRequest, InvalidToken, MissingToken, NotFound, TemporarilyUnavailable } from '../../errors.js'
import { checkedTokenFromHeader } from '../../http/authorization.js'
import { readBody } from '../../http/body.js'
import { PublicAddresses } from '../../http/public-address.js'
import { NO_STORE, sendJson } from '../../http/reply.js'
import { hasScope } from '../../as/scope.js'
import { verifyOwnAccessToken } from '../../as/verify-token.js'
import { checkCertificateBinding } from '../../tokens/certificate-binding.js'
import { SetDelivery } from './deliver.js'
import { CREDENTIAL_CHANGE, type OutgoingEvent, SESSION_REVOKED, VERIFICATION } from './events.js'
import { SSF_STREAM_SCOPE } from './scope.js'
import {
  eventsDelivered,
  PUSH_METHOD,
  parseJsonObject,
  parseStored,
  readReason,
  readStatus,
  readStreamFields,
  STREAM_BODY_LIMIT,
  type StreamRecord,
  streamConfiguration,
} from './streams.js'

/** Streams held at most, one per receiver client: past it a new one is 503 (an operator's problem, not a receiver's). */
export const MAX_STREAMS = 1000
/** Where the endpoints live, relative to the issuer. */
/** The transmitter's endpoints, relative to the issuer (config/own-paths.ts holds the one list). */
export const SSF_PATHS = SIGNALS_PATHS

/** CAEP 1.0 `initiating_entity` and an administrator's text for each way sessions end (null: not told). */
const SESSION_END_TOLD: Readonly<Record<SessionEndReason, { entity: string; text: string } | null>> = {
  // One session signed out is back-channel logout's news (its clients); the person is still signed in elsewhere.
  logout: null,
  sign_out_everywhere: { entity: 'user', text: 'The person signed out everywhere' },
  provider_logout: { entity: 'system', text: "The person's identity provider ended their session" },
  signal: { entity: 'system', text: "A security event from the person's identity provider ended their sessions" },
  admin: { entity: 'admin', text: "An administrator ended the person's sessions" },
}

export type StreamHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>

export class SignalsTransmitter {
  readonly #as: AsContext
  readonly delivery: SetDelivery
  readonly #addresses: PublicAddresses
  readonly #unsubscribe: (() => void)[]
  /** GET /.well-known/ssf-configuration (SSF 1.0 7.1). */
  readonly metadata: Record<string, unknown>

  constructor(as: AsContext, config: SignalTransmitterOutConfig) {
    this.#as = as
    this.delivery = new SetDelivery({ ...as, log: as.log.child({ component: 'ssf-transmitter' }) }, config)
    this.#addresses = new PublicAddresses({ allowHosts: config.allowHosts })
    const issuer = as.issuer
    this.metadata = {
      spec_version: '1_0',
      issuer,
      jwks_uri: `${issuer}/jwks.json`,
      delivery_methods_supported: [PUSH_METHOD],
      configuration_endpoint: issuer + SSF_PATHS.stream,
      status_endpoint: issuer + SSF_PATHS.status,
      verification_endpoint: issuer + SSF_PATHS.verify,
      // SSF 1.0 7.1.1: an OAuth 2.0 access token (ours, scope ssf:stream).
      authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
      // Every person who holds a grant with the receiver's client is in its stream; no subjects are added by hand.
      default_subjects: 'ALL',
    }
    this.#unsubscribe = [as.sessionEnds.on((e) => this.#sessionsEnded(e)), as.credentialChanges.on((c) => this.#credentialChanged(c))]
  }

  start(): void {
    this.delivery.start()
  }

  async close(): Promise<void> {
    for (const u of this.#unsubscribe) u()
    await this.delivery.close()
  }

  // -- events ------------------------------------------------------------------

  async #sessionsEnded(ended: SessionsEnded): Promise<void> {
    const told = SESSION_END_TOLD[ended.reason]
    if (told === null || ended.sessions.length === 0) return
    // Grants ended with the sessions are gone from the allowances by now: the clients of the ended sessions are told too.
    const sessionClients = ended.sessions.flatMap((s) => s.clients)
    await this.#tell(ended.sub, sessionClients, {
      type: SESSION_REVOKED,
      subId: this.#subject(ended.sub),
      payload: { event_timestamp: epochSeconds(this.#as.clock), initiating_entity: told.entity, reason_admin: { en: told.text } },
    })
  }

  async #credentialChanged(change: CredentialChange): Promise<void> {
    await this.#tell(change.sub, [], {
      type: CREDENTIAL_CHANGE,
      subId: this.#subject(change.sub),
      payload: {
        event_timestamp: epochSeconds(this.#as.clock),
        initiating_entity: 'user',
        credential_type: change.credentialType,
        change_type: change.changeType,
        ...(change.friendlyName === undefined ? {} : { friendly_name: change.friendlyName }),
      },
    })
  }

  #subject(sub: string): OutgoingEvent['subId'] {
    return { format: 'iss_sub', iss: this.#as.issuer, sub }
  }

  /** Queue `event` for every receiver whose client the person holds a grant with (or, `also`, had a session with) and whose stream asked for it. */
  async #tell(sub: string, also: readonly string[], event: OutgoingEvent): Promise<void> {
    const store = this.#as.store
    const clients = new Set(also)
    for (const a of await store.allowances.list(sub)) if (a.grantIds.length > 0) clients.add(a.clientId)
    for (const clientId of clients) {
      const stream = parseStored(await store.signals.getStream(clientId))
      if (stream === null || stream.status === 'disabled' || !eventsDelivered(stream).includes(event.type)) continue
      await this.delivery.queue(clientId, event)
    }
  }

  // -- stream management (SSF 1.0 8) --------------------------------------------

  /**
   * The receiver a request comes from: the client of one of our live access
   * tokens, meant for this server, of scope `ssf:stream`, obtained by the client
   * for itself (client credentials). RFC 6750 3 challenges otherwise.
   */
  async #receiver(req: IncomingMessage): Promise<string> {
    const as = this.#as
    const presented = checkedTokenFromHeader(req)
    if (presented === null) throw new MissingToken()
    const claims = await verifyOwnAccessToken(as, presented.token)
    if (claims === null) throw new InvalidToken(undefined, { cause: 'not a live access token of this issuer' })
    if (presented.dpop || claims.jkt !== undefined) throw new InvalidToken('Use a bearer access token here', { cause: 'DPoP at the stream endpoints' })
    if (claims.x5t !== undefined) {
      const mismatch = checkCertificateBinding({ 'x5t#S256': claims.x5t }, as.clientCertificates.presented(req))
      if (mismatch !== null) throw mismatch
    }
    if (!claims.aud.includes(as.issuer)) throw new InvalidToken('The access token is not meant for this server', { cause: 'audience is not the issuer' })
    if (!hasScope(claims.scope, SSF_STREAM_SCOPE)) throw new InsufficientScope([SSF_STREAM_SCOPE])
    if (claims.grantId !== null) {
      throw new InsufficientScope([SSF_STREAM_SCOPE], "A receiver manages its stream with its own client-credentials token, not a person's")
    }
    return claims.clientId
  }

  async #stored(clientId: string): Promise<StreamRecord | null> {
    return parseStored(await this.#as.store.signals.getStream(clientId))
  }

  /** The receiver's stream named `streamId`; another client's id, or none, is 404 (whose stream it is stays unsaid). */
  async #own(clientId: string, streamId: unknown): Promise<StreamRecord> {
    if (typeof streamId !== 'string' || streamId === '') throw new InvalidRequest('`stream_id` is required')
    const stream = await this.#stored(clientId)
    if (stream === null || stream.streamId !== streamId) throw new NotFound('No such stream')
    return stream
  }

  /** Refuse an endpoint URL that is plainly not public (an IP literal of a private range, this host's name) before storing it. */
  #checkEndpoint(endpointUrl: string): void {
    const url = new URL(endpointUrl)
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1')
    if (this.#addresses.allowsHost(host)) return
    const own = new URL(this.#as.issuer)
    const problem = /^[0-9.]+$|:/.test(host) ? this.#addresses.problem(host) : host === own.hostname || host === 'localhost' ? 'this host' : undefined
    if (problem !== undefined)
      throw new InvalidRequest('`delivery.endpoint_url` must be a public address of the receiver', { cause: `endpoint refused: ${problem}` })
    if (url.protocol !== 'https:') throw new InvalidRequest('`delivery.endpoint_url` must be an https URL')
  }

  async #save(stream: StreamRecord): Promise<void> {
    if (!(await this.#as.store.signals.putStream(stream.clientId, JSON.stringify(stream), MAX_STREAMS))) {
      this.#as.log.warn(
        { event: 'ssf_streams_full', max: MAX_STREAMS },
        'a receiver could not create a stream: the transmitter holds the most streams it keeps',
      )
      throw new TemporarilyUnavailable('This transmitter holds the most streams it keeps')
    }
  }

  #json(res: ServerResponse, status: number, body: unknown): void {
    sendJson(res, status, body, NO_STORE)
  }

  /** POST (create), GET (read), PUT (replace), PATCH (update), DELETE at the configuration endpoint. */
  readonly stream: StreamHandler = async (req, res) => {
    const clientId = await this.#receiver(req)
    const query = new URL(req.url ?? '/', 'http://x').searchParams
    const issuer = this.#as.issuer
    switch (req.method) {
      case 'GET': {
        const id = query.get('stream_id')
        if (id === null) {
          // SSF 1.0 8.1.1.2: without stream_id, every stream of this receiver (here, at most one).
          const mine = await this.#stored(clientId)
          return this.#json(res, 200, mine === null ? [] : [streamConfiguration(mine, issuer)])
        }
        return this.#json(res, 200, streamConfiguration(await this.#own(clientId, id), issuer))
      }
      case 'POST': {
        const fields = readStreamFields(parseJsonObject(await readBody(req, STREAM_BODY_LIMIT)), null)
        this.#checkEndpoint(fields.endpointUrl)
        if ((await this.#stored(clientId)) !== null) throw new Conflict('This receiver has a stream already: read, update or delete it')
        const stream: StreamRecord = { streamId: randomToken(), clientId, ...fields, status: 'enabled', reason: null }
        await this.#save(stream)
        this.#as.log.info({ event: 'ssf_stream_created', client_id: clientId, stream_id: stream.streamId }, 'a receiver created its stream')
        return this.#json(res, 201, streamConfiguration(stream, issuer))
      }
      case 'PUT':
      case 'PATCH': {
        const body = parseJsonObject(await readBody(req, STREAM_BODY_LIMIT))
        const current = await this.#own(clientId, body.stream_id)
        const fields = readStreamFields(body, req.method === 'PATCH' ? current : null)
        this.#checkEndpoint(fields.endpointUrl)
        const stream: StreamRecord = { ...current, ...fields }
        await this.#save(stream)
        this.#as.log.info({ event: 'ssf_stream_updated', client_id: clientId, stream_id: stream.streamId }, 'a receiver changed its stream')
        return this.#json(res, 200, streamConfiguration(stream, issuer))
      }
      case 'DELETE': {
        const current = await this.#own(clientId, query.get('stream_id'))
        await this.#as.store.signals.deleteStream(clientId)
        // The due ones; one waiting for a retry stays in the store (at most queue.max, Redis forgets an idle queue after a day) and goes if the receiver creates a stream again.
        const dropped = await this.delivery.forget(clientId)
        this.#as.log.info({ event: 'ssf_stream_deleted', client_id: clientId, stream_id: current.streamId, dropped }, 'a receiver deleted its stream')
        res.statusCode = 204
        res.end()
        return
      }
      default:
        throw new InvalidRequest('Unsupported method')
    }
  }

  /** GET (read) and POST (update) at the status endpoint (SSF 1.0 8.1.2). */
  readonly status: StreamHandler = async (req, res) => {
    const clientId = await this.#receiver(req)
    if (req.method === 'GET') {
      const stream = await this.#own(clientId, new URL(req.url ?? '/', 'http://x').searchParams.get('stream_id'))
      return this.#json(res, 200, { stream_id: stream.streamId, status: stream.status, ...(stream.reason === null ? {} : { reason: stream.reason }) })
    }
    const body = parseJsonObject(await readBody(req, STREAM_BODY_LIMIT))
    const current = await this.#own(clientId, body.stream_id)
    const stream: StreamRecord = { ...current, status: readStatus(body.status), reason: readReason(body.reason) }
    await this.#save(stream)
    this.#as.log.info(
      { event: 'ssf_stream_status', client_id: clientId, stream_id: stream.streamId, status: stream.status },
      "a receiver changed its stream's status",
    )
    this.#json(res, 200, { stream_id: stream.streamId, status: stream.status, ...(stream.reason === null ? {} : { reason: stream.reason }) })
  }

  /** POST at the verification endpoint (SSF 1.0 8.1.4.2): 204, and a verification event queued to the stream. */
  readonly verify: StreamHandler = async (req, res) => {
    const clientId = await this.#receiver(req)
    const body = parseJsonObject(await readBody(req, STREAM_BODY_LIMIT))
    const stream = await this.#own(clientId, body.stream_id)
    const state = body.state === undefined ? undefined : typeof body.state === 'string' && body.state.length <= 256 ? body.state : null
    if (state === null) throw new InvalidRequest('`state` must be a string of at most 256 characters')
    await this.delivery.queue(clientId, {
      type: VERIFICATION,
      // SSF 1.0 8.1.4.1: the subject of a verification event is the stream.
      subId: { format: 'opaque', id: stream.streamId },
      payload: state === undefined ? {} : { state },
    })
    res.statusCode = 204
    res.end()
  }
}
