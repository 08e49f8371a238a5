/**
 * The gateway face (resource server, RFC 6750): for a request that matches a
 * route, normalize the path, extract the token, authenticate, authorize and
 * hand the request to the upstream proxy with the path that was judged.
 *
 * Built once per Runtime: the route table, each route's validation plan,
 * scope refusals and reply options are precomputed here, so the hot path
 * only reads. A request that matches no route is not ours (`false`: the app
 * answers 404, failing closed).
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FaceDeps, GatewayFace, RequestContext } from '../context.js'
import { DpopVerifier, proofHeader } from '../dpop/verify-proof.js'
import {
  ConcurrencyLimitReached,
  InsufficientAuthorizationDetails,
  InsufficientScope,
  InsufficientUserAuthentication,
  InvalidRequest,
  InvalidToken,
  MethodNotAllowed,
  TemporarilyUnavailable,
} from '../errors.js'
import { cannotAnswer } from '../http/http2-request.js'
import { errorOnSocket, sendErrorWithId, type ErrorReplyOptions } from '../http/reply.js'
import type { ConcurrencyPlan } from './concurrency.js'
import { Authenticator, type DpopPresentation } from './authenticate.js'
import { buildTrustedIssuers, type TrustedIssuer } from './plan/issuers.js'
import { buildRoutePlans } from './plan/build.js'
import type { RoutePlan, TokenPlan } from './plan/route-plan.js'
import { Refusals, type Refusal } from './refusals.js'
import { extractToken, type ExtractedToken } from './extract.js'
import type { JwksSource } from './jwks-client.js'
import { hostOf, normalizePath } from '../http/request-target.js'
import { answerAsFinalRecipient, isLastHop } from './max-forwards.js'
import { ListFilter } from './mcp/list-filter.js'
import { checkRequirement, type McpJudgement } from './mcp/rule.js'
import { legacySessionIdOf, McpSessions, sessionIdOf } from './mcp/sessions.js'
import { ProtectedResources } from './protected-resource.js'
import { UpstreamProxy } from './upstream/proxy.js'
import type { Balancer } from './upstream/balancer.js'
import type { UpstreamTargets } from './upstream/targets.js'
import { OpenExchanges } from './open-exchanges.js'
import { RouteTable, stripPrefix, type RouteMatch } from './route-table.js'
import type { ForwardRequest } from './forward-request.js'
import type { TokenIdentity } from './token-identity.js'
import { limitDeps } from './limits/deps.js'
import { ApprovalGate } from './mcp/approval-gate.js'
import { deskFor } from '../as/approvals/desk.js'
import { ApprovalNotifier, TOP_LEVEL_TARGET } from '../as/approvals/notify.js'
import type { ApprovalNotifyConfig } from '../config/validated-config.js'
import { epochSeconds } from '../clock.js'
import type { LimitOutcome, LimitPlan } from './limits/plan.js'

/** What outlives a Runtime and is handed to every gateway the process builds. */
export interface GatewayShared {
  /** Remote JWKS caches, kept across reloads (see jwks-client.ts). */
  readonly jwks: JwksSource
  /** Upstream pool targets, kept across reloads (upstream/targets.ts); a private registry when absent. */
  readonly upstreamTargets?: UpstreamTargets
}

/** RFC 9112 6.1 / 6.3: both framing headers is how requests are smuggled past a proxy. */
function hasConflictingFraming(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined && req.headers['content-length'] !== undefined
}

/** A CORS preflight (Fetch standard, CORS-preflight request): carries no credentials by design. */
function isPreflight(req: IncomingMessage): boolean {
  return req.method === 'OPTIONS' && req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined
}

/** What #decide concludes for a request a route took. */
type Decision = ForwardRequest | Refusal

/** The normalized path and the host to match on, from the request target. */
interface Target {
  path: string
  host: string | null
}

class Gateway implements GatewayFace {
  readonly #deps: FaceDeps
  readonly #table: RouteTable<RoutePlan>
  readonly #auth: Authenticator
  readonly #proxy: UpstreamProxy
  /** Forwarded exchanges still open, ended when their token is revoked or expires. */
  readonly #exchanges: OpenExchanges
  readonly #issuers: ReadonlyMap<string, TrustedIssuer>
  readonly #defaultReply: ErrorReplyOptions
  readonly #metadata: ProtectedResources
  /** public_url's origin: a DPoP proof's `htu` is it plus the path the client used. */
  readonly #origin: string
  readonly #refusals: Refusals
  /** MCP session ids bound to who opened them (mcp/sessions.ts). */
  readonly #sessions: McpSessions
  /** Calls of approval-required tools (mcp/approval-gate.ts); null when no route has one. */
  readonly #approvalGate: ApprovalGate | null
  /** Their notifications (as/approvals/notify.ts); null when none is configured. */
  readonly #approvalNotifier: ApprovalNotifier | null

  constructor(deps: FaceDeps, shared: GatewayShared) {
    const { config } = deps
    this.#deps = deps
    this.#refusals = new Refusals({ face: 'gateway', metrics: deps.metrics, rootLog: deps.log, quiet: true }, deps.metrics)
    this.#sessions = new McpSessions(deps.store)
    const approvals = approvalParts(deps)
    this.#approvalGate = approvals.gate
    this.#approvalNotifier = approvals.notifier
    let built: readonly Balancer[] = []
    const issuers = buildTrustedIssuers({ config, own: deps.ownIssuer, store: deps.store, jwks: shared.jwks, tracing: deps.tracing })
    try {
      const metadata = new ProtectedResources(config)
      this.#metadata = metadata
      // Routes with `upstream_token: exchange | assertion` sign with the authorization server's keys.
      const signing = deps.keys === null ? null : { keys: deps.keys, issuer: config.publicUrl, clock: deps.clock }
      const { plans, pools, balancers } = buildRoutePlans({
        config,
        issuers,
        metadataUrlOf: (route) => metadata.urlOf(route),
        trustedProxies: deps.trustedProxies,
        signing,
        metrics: deps.metrics,
        ...(shared.upstreamTargets !== undefined ? { targets: shared.upstreamTargets } : {}),
        limits: limitDeps(deps),
      })
      built = balancers
      this.#table = new RouteTable(plans, (p) => p.route.match)
      const dpop = new DpopVerifier(config.dpop, deps, 'resource')
      this.#auth = new Authenticator({
        clock: deps.clock,
        log: deps.log,
        revocations: deps.revocations,
        gateway: config.gateway,
        dpop,
        tracing: deps.tracing,
        certificates: deps.clientCertificates,
      })
      this.#origin = new URL(config.publicUrl).origin
      const exchanges = new OpenExchanges({
        clock: deps.clock,
        revocations: deps.revocations,
        metrics: deps.metrics,
        graceSec: config.gateway.streamExpiryGraceSec,
      })
      this.#proxy = new UpstreamProxy(pools, deps.log, exchanges, deps.tracing, balancers)
      this.#exchanges = exchanges
    } catch (err) {
      // A gateway that is never built must not leave its introspection pools open.
      for (const issuer of issuers.values()) void issuer.opaque?.close().catch(() => undefined)
      // Nor hold pool targets (their checkers would run on).
      for (const balancer of built) void balancer.close()
      throw err
    }
    this.#defaultReply = Object.freeze({ realm: config.gateway.realm })
    this.#issuers = issuers
  }

  /**
   * The normalized path and host of the request target. The dispatcher split
   * the target once (origin- or absolute-form, RFC 9112 3.2) and checked an
   * absolute-form host against Host, so the policy judges what the upstream
   * will be told.
   */
  #target(req: IncomingMessage, ctx: RequestContext): Target {
    const path = normalizePath(ctx.rawPath)
    const absolute = ctx.targetHost
    if (absolute !== null && absolute !== undefined) return { path, host: absolute }
    return { path, host: this.#table.usesHost ? hostOf(req.headers.host) : null }
  }

  /** Route lookup; an OAuthError for a target we refuse or a method the route does not take. */
  #route(req: IncomingMessage, ctx: RequestContext): { plan: RoutePlan; path: string } | null {
    const target = this.#target(req, ctx)
    const method = req.method ?? 'GET'
    const match: RouteMatch<RoutePlan> | undefined = this.#table.match(target.path, target.host, method)
    if (match === undefined) return null
    if (match.kind === 'method') {
      ctx.routeLabel = 'method_not_allowed'
      throw new MethodNotAllowed(match.allow)
    }
    const plan = match.value
    if (method === 'TRACE' && plan.traceRefusal !== null) {
      // RFC 9110 9.3.8: TRACE echoes the request, cookies and credentials
      // included, to whoever can read the answer (cross-site tracing).
      ctx.routeLabel = 'method_not_allowed'
      throw plan.traceRefusal
    }
    ctx.routeLabel = plan.route.name
    ctx.httpRoute = plan.route.match.path
    return { plan, path: target.path }
  }

  /**
   * Everything before forwarding: route, framing, token, decision. null when
   * no route matches; a refusal to render; or what to forward (a promise of
   * one only when the token needs asynchronous work: a signature or store
   * lookup not cached yet, or a form body to read). `allowBody` is false for
   * upgrades (there is no body to look for a token in).
   */
  #decide(req: IncomingMessage, ctx: RequestContext, allowBody: boolean): Decision | Promise<Decision> | null {
    let found: { plan: RoutePlan; path: string } | null
    try {
      found = this.#route(req, ctx)
    } catch (err) {
      return { refusal: this.#refusals.answer(err, ctx, false), reply: this.#defaultReply }
    }
    if (found === null) return null
    const { plan, path } = found
    const route = plan.route
    const forwardPath = route.stripPrefix ? stripPrefix(path, route.match.path) : path
    if (hasConflictingFraming(req)) {
      return { refusal: new InvalidRequest('A request must not carry both Content-Length and Transfer-Encoding'), reply: plan.reply }
    }
    const token = plan.token
    if (token === null || (route.passPreflight && isPreflight(req))) {
      const forward: ForwardRequest = {
        route,
        upstream: plan.upstream,
        path: forwardPath,
        query: ctx.rawQuery,
        identity: null,
        body: null,
        concurrency: plan.concurrency,
      }
      // A public route's limits count by address; a passed preflight carries no credentials and is not counted.
      return token === null && plan.limits !== null ? this.#limit(req, ctx, plan, plan.limits, forward, null, null) : forward
    }
    const mcp = plan.mcp
    if (mcp !== null) {
      // Header-only checks (Origin, Content-Type, revision): nothing is read yet.
      const refused = mcp.precheck(req)
      if (refused !== null) return this.#refusals.of(refused, ctx, plan, req.method, null)
    }
    return this.#extract(req, ctx, plan, token, forwardPath, allowBody)
  }

  /** Find the token, then judge it. */
  #extract(req: IncomingMessage, ctx: RequestContext, plan: RoutePlan, token: TokenPlan, path: string, allowBody: boolean): Decision | Promise<Decision> {
    try {
      const extracted = extractToken(req, plan.route, ctx.rawQuery, allowBody)
      if (extracted instanceof Promise) {
        return extracted.then(
          (e) => this.#judge(req, ctx, plan, token, path, e, allowBody),
          (err: unknown) => this.#refusals.of(err, ctx, plan, req.method, null),
        )
      }
      return this.#judge(req, ctx, plan, token, path, extracted, allowBody)
    } catch (err) {
      return this.#refusals.of(err, ctx, plan, req.method, null)
    }
  }

  /** Authenticate and authorize the extracted token; what to forward, or the refusal. */
  #judge(
    req: IncomingMessage,
    ctx: RequestContext,
    plan: RoutePlan,
    token: TokenPlan,
    path: string,
    extracted: ExtractedToken,
    allowBody: boolean,
  ): Decision | Promise<Decision> {
    const presented = extracted.dpop
    try {
      let dpop: DpopPresentation | null = null
      if (presented) {
        dpop = { proof: proofHeader(req, 'resource'), url: this.#htu(ctx.rawPath) }
      } else if (plan.route.dpop === 'required') {
        throw new InvalidToken('This resource accepts DPoP-bound access tokens only', { cause: 'bearer token on a dpop: required route' })
      }
      const identity = this.#auth.authenticate(extracted.token, token, req.method ?? 'GET', extracted.grammarChecked, dpop, ctx.trace.span, req)
      if (identity instanceof Promise) {
        return identity.then(
          (id) => this.#inspect(req, ctx, plan, path, extracted, id, allowBody, presented),
          (err: unknown) => this.#shortOfScope(err, req, ctx, plan, allowBody, presented),
        )
      }
      return this.#inspect(req, ctx, plan, path, extracted, identity, allowBody, presented)
    } catch (err) {
      return this.#shortOfScope(err, req, ctx, plan, allowBody, presented)
    }
  }

  /**
   * A token refusal. When the token is valid but short of the route's scope
   * (or step-up) on an MCP route, the body is read (the token is known good)
   * so that the one 403 (or 401) names everything the call needs, route and
   * tool together.
   */
  #shortOfScope(err: unknown, req: IncomingMessage, ctx: RequestContext, plan: RoutePlan, allowBody: boolean, presented: boolean): Refusal | Promise<Refusal> {
    const mcp = plan.mcp
    const short = err instanceof InsufficientScope || err instanceof InsufficientUserAuthentication
    if (!short || mcp === null || !allowBody || !mcp.applies(req)) {
      return this.#refusals.of(err, ctx, plan, req.method, null, presented)
    }
    return mcp.judge(req).then(
      (judged) => this.#refusals.of(err, ctx, plan, req.method, judged, presented),
      (bodyErr: unknown) => this.#refusals.of(bodyErr, ctx, plan, req.method, null, presented),
    )
  }

  /**
   * A valid token on an MCP route: now, and only now, the body is read
   * (within `mcp.max_body`) and judged, so a request without a valid token
   * is answered before any of its body is buffered.
   */
  #inspect(
    req: IncomingMessage,
    ctx: RequestContext,
    plan: RoutePlan,
    path: string,
    extracted: ExtractedToken,
    identity: TokenIdentity,
    allowBody: boolean,
    presented: boolean,
  ): Decision | Promise<Decision> {
    const mcp = plan.mcp
    if (mcp === null) return this.#admit(req, ctx, plan, path, extracted, identity, req.method, null)
    const header = sessionIdOf(req)
    // A 2024-11-05 session travels in the query (the one forwarded): checked alike, and a header beside it must be the same id.
    const legacy = legacySessionIdOf(extracted.query)
    const session = legacy === undefined || legacy === header ? header : header === undefined ? legacy : null
    const judge = (sessionUrlElicitation: boolean): Decision | Promise<Decision> => {
      if (!allowBody || !mcp.applies(req)) return this.#admit(req, ctx, plan, path, extracted, identity, req.method, null, session)
      return mcp.judge(req).then(
        (judged) => this.#admit(req, ctx, plan, path, extracted, identity, req.method, judged, session, sessionUrlElicitation),
        (err: unknown) => this.#refusals.of(err, ctx, plan, req.method, null, presented),
      )
    }
    if (session === undefined) return judge(false)
    // A session is someone's: only a token of whoever opened it may use it (any method: POST, the GET stream, DELETE).
    return this.#sessions.check(plan.route.name, session, identity).then(
      (checked) => (checked.refused === null ? judge(checked.urlElicitation) : this.#refusals.of(checked.refused, ctx, plan, req.method, null, presented)),
      (err: unknown) => this.#refusals.of(err, ctx, plan, req.method, null, presented),
    )
  }

  /**
   * The URI a DPoP proof must name (RFC 9449 4.3): public_url's origin and
   * the path as the client sent it (the dispatcher already took an
   * absolute-form target apart); never the query.
   */
  #htu(rawPath: string): string {
    return this.#origin + rawPath
  }

  /** A valid token: counted, and what to forward (after the route's limits); or, on an MCP route, the 403 of a tool it may not call. */
  #admit(
    req: IncomingMessage,
    ctx: RequestContext,
    plan: RoutePlan,
    path: string,
    extracted: ExtractedToken,
    identity: TokenIdentity,
    method: string | undefined,
    mcp: McpJudgement | null,
    session?: string | null,
    sessionUrlElicitation = false,
  ): Decision | Promise<Decision> {
    const required = mcp?.requirement ?? null
    if (required !== null) {
      // Step-up before scope, as on the route (authenticate.ts).
      const refusal =
        required.stepUp?.check(identity.claims, this.#deps.clock.now() / 1000, this.#deps.config.gateway.clockSkewSec, identity.issuerId === 'self') ??
        checkRequirement(required, identity.scopes)
      if (refusal !== null) return this.#refusals.of(refusal, ctx, plan, method, mcp)
    }
    // RFC 9396: the route's authorization details rule, and the entries it forwards.
    const details = plan.authorizationDetails === null ? null : plan.authorizationDetails.judge(identity)
    if (details instanceof InsufficientAuthorizationDetails) return this.#refusals.of(details, ctx, plan, method, mcp)
    ctx.clientId = identity.clientId
    ctx.sub = identity.sub
    this.#refusals.countValid()
    const forward: ForwardRequest = {
      route: plan.route,
      upstream: plan.upstream,
      path,
      query: extracted.query,
      identity,
      body: mcp?.body ?? extracted.body,
      concurrency: plan.concurrency,
    }
    if (details !== null) forward.authorizationDetails = details
    if (plan.route.upstreamToken !== null) forward.token = extracted.token
    const lists = mcp?.lists ?? null
    const rule = plan.mcp
    if (lists !== null && rule !== null) {
      // The answer lists what this token may use: filtered on its way back.
      forward.rewriter = new ListFilter(lists, (kind, name) => rule.visible(kind, name, identity.scopes), mcp?.modern ?? false)
    }
    // An answer that opens a session reaches the client only once the session is bound to this token's owner
    // (with whether its initialize declared URL elicitation: a held call is then answered with -32042).
    if (rule !== null)
      forward.rewriter = this.#sessions.binder(plan.route.name, session ?? undefined, identity, ctx.id, forward.rewriter ?? null, mcp?.urlElicitation ?? false)
    const approval = mcp?.approval ?? null
    if (approval !== null && mcp !== null) {
      // A call that waits for the person's approval (approval-gate.ts): forwarded only once approved.
      const gate = this.#approvalGate
      if (gate === null) return this.#refusals.of(new TemporarilyUnavailable('Approvals are not available here'), ctx, plan, method, null)
      const urlElicitation = mcp.modern ? mcp.urlElicitation : sessionUrlElicitation
      const pass = (): Promise<Decision> =>
        gate.pass(plan.route, identity, approval, mcp.body, mcp.modern, urlElicitation).then(
          (outcome) => {
            if ('answer' in outcome) return this.#refusals.of(outcome.answer, ctx, plan, method, null)
            forward.body = outcome.forward
            return forward
          },
          (err: unknown) => this.#refusals.of(err, ctx, plan, method, null),
        )
      // The limits first: a `reuse: once` approval is used only by a call that is then forwarded, never by one a
      // limit refuses (a call that waits for the person is counted, as any request the gateway answers for the route).
      if (plan.limits === null) return pass()
      const limited = this.#limit(req, ctx, plan, plan.limits, forward, identity, mcp)
      if (limited instanceof Promise) return limited.then((d) => (d === forward ? pass() : d))
      return limited === forward ? pass() : limited
    }
    return plan.limits === null ? forward : this.#limit(req, ctx, plan, plan.limits, forward, identity, mcp)
  }

  /**
   * The limit step (docs/traffic.md), after the token and the MCP body were
   * judged: the request is counted only when everything else let it through.
   * What it allows carries the RateLimit fields to the answer.
   */
  #limit(
    req: IncomingMessage,
    ctx: RequestContext,
    plan: RoutePlan,
    limits: LimitPlan,
    forward: ForwardRequest,
    identity: TokenIdentity | null,
    mcp: McpJudgement | null,
  ): Decision | Promise<Decision> {
    const outcome = limits.apply({ req, identity, toolCalls: mcp?.toolCalls ?? [], mcp: plan.mcp === null ? null : { id: mcp?.id ?? null } })
    // Decided from leases: at once, so the request is forwarded in this turn of the event loop.
    if (!(outcome instanceof Promise)) return this.#limited(outcome, ctx, plan, forward)
    return outcome.then((o) => this.#limited(o, ctx, plan, forward))
  }

  #limited(outcome: LimitOutcome, ctx: RequestContext, plan: RoutePlan, forward: ForwardRequest): Decision {
    if ('refusal' in outcome) return { refusal: this.#refusals.answer(outcome.refusal, ctx, false), reply: plan.reply }
    if (outcome.fields.length > 0) forward.fields = outcome.fields
    return forward
  }

  handle(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): boolean {
    if (this.#table.size === 0) return false
    if (this.#metadata.size > 0 && this.#serveMetadata(req, res, ctx)) return true
    let decision: Decision | Promise<Decision> | null
    try {
      decision = this.#decide(req, ctx, true)
    } catch (err) {
      this.#failed(res, ctx, err)
      return true
    }
    if (decision === null) return false
    if (decision instanceof Promise) {
      decision.then(
        (d) => this.#act(req, res, ctx, d),
        (err: unknown) => this.#failed(res, ctx, err),
      )
    } else {
      this.#act(req, res, ctx, decision)
    }
    return true
  }

  /** RFC 9728 3: a route's metadata document, before any route can take the path (a route at `/` would). */
  #serveMetadata(req: IncomingMessage, res: ServerResponse, ctx: RequestContext): boolean {
    const served = this.#metadata.serve(req, res, ctx.rawPath)
    if (served === false) return false
    ctx.routeLabel = 'protected_resource_metadata'
    if (served !== true) sendErrorWithId(res, ctx.id, served, this.#defaultReply)
    return true
  }

  #act(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, decision: Decision): void {
    // Also runs as a promise callback: a throw here must become a 500, never
    // an unhandled rejection (which would end the process).
    try {
      if ('refusal' in decision) sendErrorWithId(res, ctx.id, decision.refusal, decision.reply)
      else if (isLastHop(req)) answerAsFinalRecipient(req, res, ctx, decision.route)
      else if (decision.concurrency == null || this.#holdSlot(req, res, ctx, decision, decision.concurrency)) this.#proxy.forward(req, res, decision, ctx)
    } catch (err) {
      this.#failed(res, ctx, err)
    }
  }

  /**
   * The route's concurrency step (concurrency.ts): a slot held until the
   * response closes, which every ending emits (finished, client gone,
   * upstream failure or timeout, a refused body); or the 503 answered here
   * and false, nothing forwarded. A request that can no longer be answered
   * takes no slot (the proxy sends nothing for it).
   */
  #holdSlot(req: IncomingMessage, res: ServerResponse, ctx: RequestContext, fwd: ForwardRequest, limits: ConcurrencyPlan): boolean {
    if (cannotAnswer(req, res)) return true
    const slot = limits.admit(req, fwd.identity, false)
    if (slot instanceof ConcurrencyLimitReached) {
      sendErrorWithId(res, ctx.id, slot, { realm: fwd.route.realm })
      return false
    }
    fwd.slot = slot
    res.once('close', slot.release)
    return true
  }

  /** A failure outside judging (a bug, or the store failing while forwarding): answered when the answer has not started. */
  #failed(res: ServerResponse, ctx: RequestContext, err: unknown): void {
    sendErrorWithId(res, ctx.id, this.#refusals.answer(err, ctx, false))
  }

  async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, ctx: RequestContext): Promise<boolean> {
    if (this.#table.size === 0) return false
    const decision = await this.#decide(req, ctx, false)
    if (decision === null) return false
    if ('refusal' in decision) errorOnSocket(socket, decision.refusal, decision.reply, ctx.id)
    else if (decision.concurrency == null || this.#holdTunnelSlot(req, socket, ctx, decision, decision.concurrency))
      this.#proxy.upgrade(req, socket, head, decision, ctx)
    return true
  }

  /** As #holdSlot, for a WebSocket upgrade: a stream slot, held until the socket closes. */
  #holdTunnelSlot(req: IncomingMessage, socket: Duplex, ctx: RequestContext, fwd: ForwardRequest, limits: ConcurrencyPlan): boolean {
    if (socket.destroyed) return true
    const slot = limits.admit(req, fwd.identity, true)
    if (slot instanceof ConcurrencyLimitReached) {
      errorOnSocket(socket, slot, { realm: fwd.route.realm }, ctx.id)
      return false
    }
    socket.once('close', slot.release)
    return true
  }

  async close(): Promise<void> {
    // Exchanges still open (WebSocket tunnels outlive a reload) stay ended by revocation and expiry until they close.
    this.#exchanges.retire()
    this.#auth.clear()
    await this.#approvalNotifier?.close()
    await Promise.all([this.#proxy.close(), ...[...this.#issuers.values()].map((i) => i.opaque?.close())])
  }
}

/** The approval gate and its notifier, when a route has an approval-required tool (and there are keys to seal with). */
function approvalParts(deps: FaceDeps): { gate: ApprovalGate | null; notifier: ApprovalNotifier | null } {
  const { config } = deps
  const routes = config.routes.filter((r) => (r.mcp?.approvalTools.length ?? 0) > 0)
  if (routes.length === 0 || deps.keys === null) return { gate: null, notifier: null }
  const targets = new Map<string, ApprovalNotifyConfig>()
  if (config.approvals.notify !== null) targets.set(TOP_LEVEL_TARGET, config.approvals.notify)
  for (const r of routes) if (r.mcp?.approvals.notify) targets.set(r.name, r.mcp.approvals.notify)
  const notifier = targets.size === 0 ? null : new ApprovalNotifier({ store: deps.store, clock: deps.clock, log: deps.log, metrics: deps.metrics, targets })
  notifier?.start()
  const desk = deskFor(deps, config.approvals)
  const gate = new ApprovalGate({ desk, notifier, keys: deps.keys, issuer: config.publicUrl, now: () => epochSeconds(deps.clock) })
  return { gate, notifier }
}

/**
 * Build the gateway face for one Runtime. `shared` holds what the process
 * keeps across reloads (the JWKS registry).
 */
export function createGateway(deps: FaceDeps, shared: GatewayShared): GatewayFace {
  return new Gateway(deps, shared)
}
