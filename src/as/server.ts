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
import { callbackPath } from './identity-providers/urls.js'
import { backchannelLogoutPath, upstreamBackchannelLogout } from './identity-providers/backchannel-logout.js'

interface Endpoint {
  /** `routeLabel` for metrics and the access log. */
  label: string
  handler: AsHandler
  cors: CorsMode
  /** Methods the endpoint serves (for OPTIONS and 405); null: the handler decides (front channel). */
  methods: readonly string[] | null
}

/** Where each endpoint lives relative to the issuer, so an issuer with a path (`https://h/auth`) works. */
function routeTable(as: AsContext, frontChannel: ReadonlyMap<string, AsHandler>): Map<string, Endpoint> {
  const base = new URL(as.issuer).pathname.replace(/\/+$/, '')
  const metadata = staticJsonHandler(metadataDocument(as))
  const routes = new Map<string, Endpoint>()
  const add = (path: string, e: Endpoint): void => {
    routes.set(path, e)
  }
  for (const [path, handler] of frontChannel) {
    add(base + path, { label: `as:${path.replace(/^\/+/, '') || 'root'}`, handler, cors: 'none', methods: null })
  }
  // One callback per identity provider: a response can only come back to the provider it was meant for.
  for (const p of as.as.identityProviders) {
    add(base + callbackPath(p.id), { label: 'as:login/upstream/callback', handler: upstreamCallback(p.id), cors: 'none', methods: null })
    // OIDC Back-Channel Logout 1.0: published only for a provider that sends logout tokens.
    if (p.backchannelLogout) {
      add(base + backchannelLogoutPath(p.id), { label: 'as:idp/backchannel-logout', handler: upstreamBackchannelLogout(p.id), cors: 'none', methods: ['POST'] })
    }
  }
  // RFC 8414 3.1: the well-known segment goes between host and the issuer's path.
  add(`/.well-known/oauth-authorization-server${base}`, { label: 'as:metadata', handler: metadata, cors: 'public', methods: ['GET', 'HEAD'] })
  // OIDC Discovery 4.1: appended to the issuer.
  add(`${base}/.well-known/openid-configuration`, { label: 'as:metadata', handler: metadata, cors: 'public', methods: ['GET', 'HEAD'] })
  add(`${base}/jwks.json`, { label: 'as:jwks', handler: jwksHandler(as), cors: 'public', methods: ['GET', 'HEAD'] })
  add(`${base}/token`, { label: 'as:token', handler: handleToken, cors: 'clients', methods: ['POST'] })
  add(`${base}/revoke`, { label: 'as:revoke', handler: handleRevoke, cors: 'clients', methods: ['POST'] })
  add(`${base}/introspect`, { label: 'as:introspect', handler: handleIntrospect, cors: 'none', methods: ['POST'] })
  add(`${base}/userinfo`, { label: 'as:userinfo', handler: handleUserinfo, cors: 'clients', methods: ['GET', 'HEAD', 'POST'] })
  if (as.as.registration !== null) {
    // RFC 7591 3 / RFC 7592 2: browser-based clients register too, so any origin may.
    add(`${base}/register`, { label: 'as:register', handler: handleRegister, cors: 'public', methods: ['POST', 'GET', 'DELETE'] })
  }
  // RFC 9126 2: clients push from their back end; browser-based ones may too, as at /token.
  add(`${base}/par`, { label: 'as:par', handler: handlePushedAuthorizationRequest, cors: 'clients', methods: ['POST'] })
  add(`${base}/device_authorization`, {
    label: 'as:device_authorization',
    handler: handleDeviceAuthorization,
    cors: 'clients',
    methods: ['POST'],
  })
  return routes
}

/**
 * The authorization server face for one Runtime.
 * @param frontChannel the front-channel pages (default: `interaction/front-channel-routes.ts`); paths relative to the issuer.
 */
export function createAuthorizationServer(as: AsContext, frontChannel: ReadonlyMap<string, AsHandler> = frontChannelRoutes): Face {
  const routes = routeTable(as, frontChannel)
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
      sendError(res, answerFailure(err, ctx.log, as.failures).answer)
    }
    return true
  }

  return {
    handle,
    owns: (rawPath) => routes.has(rawPath),
    async close() {
      // The store and revocation list are shared; the metadata document fetcher is this Runtime's.
      await as.closeClientLookup()
    },
  }
}
