/**
 * The authorization server face: exact-path routing (a Map, no framework) to
 * the back-channel endpoints here and the front-channel pages of
 * `interaction/front-channel-routes.ts`. Every failure goes through the one failure path
 * (`http/failure.ts`) and is rendered by `sendError`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Face, RequestContext } from '../context.js'
import { MethodNotAllowed } from '../errors.js'
import { answerFailure } from '../http/failure.js'
import { sendError } from '../http/reply.js'
import type { AsContext, AsHandler } from './context.js'
import { CorsPolicy, type CorsMode } from './cors.js'
import { handleBackchannelAuthentication } from './ciba/backchannel-authentication.js'
import { handleDeviceAuthorization } from './device-authorization.js'
import { frontChannelRoutes } from './interaction/front-channel-routes.js'
import { handleIntrospect } from './introspect.js'
import { jwksHandler, staticJsonHandler } from './jwks.js'
import { metadataDocument } from './server-metadata.js'
import { handlePushedAuthorizationRequest } from './par.js'
import { handleRegister } from './register.js'
import { handleRevoke } from './revoke.js'
import { handleToken } from './token.js'
import { handleUserinfo } from './userinfo.js'
import { upstreamCallback } from './identity-providers/callback.js'
import { upstreamBackchannelLogout } from './identity-providers/backchannel-logout.js'
import { ownPaths, type BackChannelEndpoint, type OwnEndpoint, type SignalsEndpoint } from '../config/own-paths.js'
import type { SignalsReceiverFace } from '../signals/build.js'

interface Endpoint {
  /** `routeLabel` for metrics and the access log. */
  label: string
  handler: AsHandler
  cors: CorsMode
  /** Methods the endpoint serves (for OPTIONS and 405); null: the handler decides (front channel). */
  methods: readonly string[] | null
}

/** The endpoint that serves one of bearward's own paths (own-paths.ts: the one list of them). */
function endpointFor(
  as: AsContext,
  own: OwnEndpoint,
  frontChannel: ReadonlyMap<string, AsHandler>,
  metadata: AsHandler,
  signals: SignalsReceiverFace | null,
): Endpoint {
  switch (own.kind) {
    case 'page': {
      const handler = frontChannel.get(own.page) as AsHandler
      return { label: `as:${own.page.replace(/^\/+/, '') || 'root'}`, handler, cors: 'none', methods: null }
    }
    // One callback per identity provider: a response can only come back to the provider it was meant for.
    case 'upstream-callback':
      return { label: 'as:login/upstream/callback', handler: upstreamCallback(own.provider), cors: 'none', methods: null }
    // OIDC Back-Channel Logout 1.0: published only for a provider that sends logout tokens.
    case 'upstream-logout':
      return { label: 'as:idp/backchannel-logout', handler: upstreamBackchannelLogout(own.provider), cors: 'none', methods: ['POST'] }
    case 'oauth-metadata':
      return { label: 'as:metadata', handler: metadata, cors: 'public', methods: ['GET', 'HEAD'] }
    case 'back':
      return backChannelEndpoint(as, own.name, metadata)
    case 'signals':
      return signalsEndpoint(own.name, signals)
  }
}

/** A Shared Signals endpoint; ownPaths lists one only where `signals` serves it. */
function signalsEndpoint(name: SignalsEndpoint, signals: SignalsReceiverFace | null): Endpoint {
  const push = signals?.push ?? null
  const transmitter = signals?.transmitter ?? null
  if (name === 'events') {
    if (push === null) throw new Error('the push endpoint is listed without a push receiver')
    // RFC 8935 2: transmitters POST from their back end; no browser has a reason to.
    return { label: 'as:signals/events', handler: (req, res, ctx) => push(req, res, ctx), cors: 'none', methods: ['POST'] }
  }
  if (transmitter === null) throw new Error('a transmitter endpoint is listed without a transmitter')
  switch (name) {
    case 'ssfConfiguration':
      return { label: 'as:ssf-configuration', handler: staticJsonHandler(transmitter.metadata), cors: 'public', methods: ['GET', 'HEAD'] }
    // Receivers manage their streams from their back end: no browser has a reason to.
    case 'stream':
      return { label: 'as:ssf/stream', handler: (req, res) => transmitter.stream(req, res), cors: 'none', methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] }
    case 'status':
      return { label: 'as:ssf/status', handler: (req, res) => transmitter.status(req, res), cors: 'none', methods: ['GET', 'POST'] }
    case 'verify':
      return { label: 'as:ssf/verify', handler: (req, res) => transmitter.verify(req, res), cors: 'none', methods: ['POST'] }
  }
}

function backChannelEndpoint(as: AsContext, name: BackChannelEndpoint, metadata: AsHandler): Endpoint {
  switch (name) {
    // OIDC Discovery 4.1: appended to the issuer.
    case 'openidConfiguration':
      return { label: 'as:metadata', handler: metadata, cors: 'public', methods: ['GET', 'HEAD'] }
    case 'jwks':
      return { label: 'as:jwks', handler: jwksHandler(as), cors: 'public', methods: ['GET', 'HEAD'] }
    case 'token':
      return { label: 'as:token', handler: handleToken, cors: 'clients', methods: ['POST'] }
    case 'revoke':
      return { label: 'as:revoke', handler: handleRevoke, cors: 'clients', methods: ['POST'] }
    case 'introspect':
      return { label: 'as:introspect', handler: handleIntrospect, cors: 'none', methods: ['POST'] }
    case 'userinfo':
      return { label: 'as:userinfo', handler: handleUserinfo, cors: 'clients', methods: ['GET', 'HEAD', 'POST'] }
    // RFC 7591 3 / RFC 7592 2: browser-based clients register too, so any origin may.
    case 'register':
      return { label: 'as:register', handler: handleRegister, cors: 'public', methods: ['POST', 'GET', 'DELETE'] }
    // RFC 9126 2: clients push from their back end; browser-based ones may too, as at /token.
    case 'par':
      return { label: 'as:par', handler: handlePushedAuthorizationRequest, cors: 'clients', methods: ['POST'] }
    case 'deviceAuthorization':
      return { label: 'as:device_authorization', handler: handleDeviceAuthorization, cors: 'clients', methods: ['POST'] }
    // CIBA 7: confidential clients from their back end; no browser has a reason to.
    case 'backchannelAuthentication':
      return { label: 'as:bc-authorize', handler: handleBackchannelAuthentication, cors: 'none', methods: ['POST'] }
  }
}

/** Where each endpoint lives relative to the issuer, so an issuer with a path (`https://h/auth`) works. */
function routeTable(as: AsContext, frontChannel: ReadonlyMap<string, AsHandler>, signals: SignalsReceiverFace | null): Map<string, Endpoint> {
  const metadata = staticJsonHandler(metadataDocument(as))
  const routes = new Map<string, Endpoint>()
  const served = { push: signals?.push != null, transmitter: signals?.transmitter != null }
  for (const own of ownPaths(as.issuer, as.as, frontChannel.keys(), served))
    routes.set(own.path, endpointFor(as, own.endpoint, frontChannel, metadata, signals))
  return routes
}

/**
 * The authorization server face for one Runtime.
 * @param frontChannel the front-channel pages (default: `interaction/front-channel-routes.ts`); paths relative to the issuer.
 */
export function createAuthorizationServer(
  as: AsContext,
  frontChannel: ReadonlyMap<string, AsHandler> = frontChannelRoutes,
  signals: SignalsReceiverFace | null = null,
): Face {
  const routes = routeTable(as, frontChannel, signals)
  const cors = new CorsPolicy(as.clients.values())

  async function handle(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): Promise<boolean> {
    const endpoint = routes.get(ctx.rawPath)
    if (endpoint === undefined) return false
    ctx.routeLabel = endpoint.label
    try {
      if (endpoint.methods !== null) {
        if (req.method === 'OPTIONS') {
          cors.preflight(endpoint.cors, endpoint.methods, req, res)
          return true
        }
        cors.apply(endpoint.cors, req, res)
        if (!endpoint.methods.includes(req.method ?? '')) throw new MethodNotAllowed(endpoint.methods)
      }
      await endpoint.handler(req, res, ctx, as)
    } catch (err) {
      const { answer } = answerFailure(err, ctx.log, as.failures)
      // The access line's reason: the error code the client was given.
      ctx.refusal = answer.error
      sendError(res, answer)
    }
    return true
  }

  return {
    handle,
    owns: (rawPath) => routes.has(rawPath),
    async close() {
      // The store and revocation list are shared; the metadata document fetcher is this Runtime's.
      await Promise.all([as.closeClientLookup(), signals?.close()])
    },
  }
}
