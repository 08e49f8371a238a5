/**
 * The approval step of an MCP route (issue #41, docs/approvals.md): a `tools/call` of a tool whose rule
 * says `approval: required` reaches the upstream only with the person's approval of that very call.
 *
 * It runs after the token's scopes and step-up were found sufficient (the approval supplements OAuth,
 * never replaces it). The call's binding is SHA-256 of the canonical JSON (RFC 8785, canonical-json.ts)
 * of {route, tool, arguments}; an approval is bound to it and to the token's person, client and grant.
 * An approved one passes the call (once, or until its end with `reuse: ttl`); otherwise the same
 * pending approval (or a new one) is opened, and the client is sent to the approval page:
 * - 2026-07-28, with URL elicitation in the request's client capabilities: the `input_required` result,
 *   one `elicitation/create` request of mode `url`, and a `requestState` of the gateway's own (HMAC,
 *   `bwa1.` prefix). The retry's own `requestState` and `inputResponses` entry are taken out of the
 *   message before it is forwarded (an upstream's own requestState passes untouched).
 * - Before, when the session's `initialize` declared URL elicitation: the JSON-RPC error -32042 with
 *   one `mode: "url"` elicitation.
 * - Otherwise: a tool result with `isError: true` whose text gives the page's URL.
 * Only tokens of this authorization server name a person its page can sign in.
 * A call holding a number whose decimal digits are not the value JSON.parse read (json.ts) is refused:
 * the upstream acts on the digits, the person would have approved the double.
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type { ApprovalDesk } from '../../as/approvals/desk.js'
import { type ApprovalNotifier, TOP_LEVEL_TARGET } from '../../as/approvals/notify.js'
import { approvalPageUrl } from '../../as/interaction/approval-next.js'
import type { RouteConfig } from '../../config/validated-config.js'
import { sealingKey, type SealingKey } from '../../crypto/sealed.js'
import { InvalidRequest, McpApprovalRequired } from '../../errors.js'
import type { KeySet } from '../../keys/keyset.js'
import type { TokenIdentity } from '../token-identity.js'
import { canonicalJson, NotCanonicalizable } from '../../crypto/canonical-json.js'
import { inexactNumber } from './json.js'
import { param, type Params } from './messages.js'
import type { ApprovalCall } from './rule.js'

/** The key of the gateway's own entry in `inputRequests` / `inputResponses`. */
export const APPROVAL_INPUT_KEY = 'bearward_approval'
/** The gateway's own requestState starts so (an upstream's never does, and passes through). */
export const REQUEST_STATE_PREFIX = 'bwa1.'
/** What the 2025-11-25 error says (the SDKs show it). */
const ELICITATION_MESSAGE = 'This request requires the person’s approval.'

/** What the gate decided: forward these bytes, or answer with this. */
export type GateOutcome = { readonly forward: Buffer } | { readonly answer: McpApprovalRequired }

/** What the gateway's requestState says (sealed): which approval, for which call and token. */
interface RequestState {
  /** approval id */
  a: string
  /** binding */
  b: string
  /** sub, client */
  s: string
  c: string
  /** until (epoch s) */
  e: number
}

export interface ApprovalGateDeps {
  readonly desk: ApprovalDesk
  readonly notifier: ApprovalNotifier | null
  readonly keys: KeySet
  readonly issuer: string
  now(): number
}

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('base64url')
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

export class ApprovalGate {
  readonly #d: ApprovalGateDeps
  readonly #keys: readonly SealingKey[]

  constructor(deps: ApprovalGateDeps) {
    this.#d = deps
    // Every instance derives the same keys from the signing keys: a retry may come through another.
    this.#keys = deps.keys.all.map((k) => sealingKey(Buffer.from(String(k.privateKey.export({ format: 'jwk' }).d), 'base64url'), 'mcp approval state'))
  }

  /**
   * Judge one call of an approval-required tool. `modern`: a 2026-07-28 request; `urlElicitation`: the client
   * declared URL-mode elicitation (its session's initialize, or the request's envelope). Rejects with
   * InvalidRequest (400) for arguments that have no canonical form, and with the store's error.
   */
  async pass(route: RouteConfig, identity: TokenIdentity, call: ApprovalCall, body: Buffer, modern: boolean, urlElicitation: boolean): Promise<GateOutcome> {
    const mcp = route.mcp
    if (mcp === null) throw new Error('approval gate on a route without mcp')
    const { sub, clientId } = identity
    if (identity.issuerId !== 'self' || sub === null || clientId === null)
      return this.#toolError(call, 'This tool needs the approval of a person signed in at this server, which only its own tokens can ask for.')
    // The upstream parses the bytes forwarded: a number whose digits say more than the double the binding holds would pass unseen.
    const inexact = inexactNumber(body.toString('utf8'))
    if (inexact !== null)
      throw new InvalidRequest('The tool call holds a number that cannot be bound to an approval as written', {
        cause: `mcp approval inexact number ${inexact.slice(0, 40)}`,
      })
    const args = param(call.params, 'arguments') ?? {}
    let argumentsJson: string
    let binding: string
    try {
      argumentsJson = canonicalJson(args)
      binding = sha256(canonicalJson({ route: route.name, tool: call.tool, arguments: args }))
    } catch (err) {
      if (!(err instanceof NotCanonicalizable)) throw err
      throw new InvalidRequest('The tool arguments cannot be bound to an approval (RFC 8785)', { cause: `mcp approval arguments: ${err.message}` })
    }
    const state = this.#ownState(call.params)
    const passed = await this.#d.desk.consume(sub, clientId, identity.grantId, binding)
    // The gateway's own retry members never reach the upstream, authentic or not.
    if (passed !== null) return { forward: carriesOwnMembers(call.params) ? this.#withoutOwnMembers(call) : body }
    // The retry of a decided call: a denial is told, not asked again (the 2026-07-28 client would loop).
    const earlier = state !== null && state.b === binding && state.s === sub && state.c === clientId ? await this.#d.desk.get(state.a) : null
    if (earlier?.status === 'denied') return this.#toolError(call, `The person denied this call of the tool “${call.tool}”.`)
    if (state !== null && declined(call.params))
      return this.#toolError(call, `The call of the tool “${call.tool}” was not approved: the approval page was not opened.`)
    const opened = await this.#d.desk.open({
      kind: 'mcp_tool',
      sub,
      clientId,
      grantId: identity.grantId,
      binding,
      subject: { kind: 'mcp_tool', route: route.name, tool: call.tool, argumentsJson, reuse: mcp.approvals.reuse },
      signIn: { acr: mcp.approvals.acr, maxAgeSec: mcp.approvals.maxAgeSec },
      ttlSec: mcp.approvals.ttlSec,
    })
    if (opened.outcome === 'too_many')
      return this.#toolError(call, 'Too many calls are waiting for the person’s approval. Wait until they decide, then try again.')
    const record = opened.record
    const url = approvalPageUrl(this.#d.issuer, record.id)
    if (opened.outcome === 'created' && this.#d.notifier !== null) {
      const target = mcp.approvals.notify !== null ? route.name : TOP_LEVEL_TARGET
      void this.#d.notifier.queue(target, record, url)
    }
    const message = `Approve the call of the tool “${call.tool}”.`
    if (modern && urlElicitation) {
      const sealed = this.#seal({ a: record.id, b: binding, s: sub, c: clientId, e: record.expiresAt })
      return this.#answer(call, {
        result: {
          resultType: 'input_required',
          inputRequests: { [APPROVAL_INPUT_KEY]: { method: 'elicitation/create', params: { mode: 'url', message, url } } },
          requestState: sealed,
        },
      })
    }
    if (!modern && urlElicitation) {
      return this.#answer(call, {
        error: { code: -32042, message: ELICITATION_MESSAGE, data: { elicitations: [{ mode: 'url', elicitationId: record.id, url, message }] } },
      })
    }
    return this.#toolError(call, `This call of the tool “${call.tool}” needs the person’s approval. Open ${url} to approve it, then make the same call again.`)
  }

  #answer(call: ApprovalCall, member: Record<string, unknown>): GateOutcome {
    return { answer: new McpApprovalRequired({ jsonrpc: '2.0', id: call.id, ...member }, { cause: 'mcp call held for approval' }) }
  }

  #toolError(call: ApprovalCall, text: string): GateOutcome {
    return this.#answer(call, { result: { content: [{ type: 'text', text }], isError: true } })
  }

  /** The message without the gateway's own `requestState` and `inputResponses` entry, as JSON. */
  #withoutOwnMembers(call: ApprovalCall): Buffer {
    const params: Record<string, unknown> = { ...call.params }
    const state = param(call.params, 'requestState')
    if (typeof state === 'string' && state.startsWith(REQUEST_STATE_PREFIX)) delete params.requestState
    const responses = param(call.params, 'inputResponses')
    if (isObject(responses)) {
      const rest = Object.fromEntries(Object.entries(responses).filter(([k]) => k !== APPROVAL_INPUT_KEY))
      if (Object.keys(rest).length === 0) delete params.inputResponses
      else params.inputResponses = rest
    }
    return Buffer.from(JSON.stringify({ ...call.message, params }), 'utf8')
  }

  #seal(state: RequestState): string {
    const payload = Buffer.from(JSON.stringify(state), 'utf8').toString('base64url')
    return `${REQUEST_STATE_PREFIX}${payload}.${this.#mac(this.#keys[0] as SealingKey, payload)}`
  }

  /** The gateway's own requestState of this request, when authentic and not lapsed; null otherwise. */
  #ownState(params: Params): RequestState | null {
    const raw = param(params, 'requestState')
    if (typeof raw !== 'string' || !raw.startsWith(REQUEST_STATE_PREFIX) || raw.length > 2048) return null
    const [payload, mac, extra] = raw.slice(REQUEST_STATE_PREFIX.length).split('.')
    if (payload === undefined || mac === undefined || extra !== undefined) return null
    const given = Buffer.from(mac, 'base64url')
    const authentic = this.#keys.some((k) => {
      const want = Buffer.from(this.#mac(k, payload), 'base64url')
      return want.length === given.length && timingSafeEqual(want, given)
    })
    if (!authentic) return null
    const state = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as RequestState
    return state.e > this.#d.now() - 86_400 ? state : null
  }

  #mac(key: SealingKey, payload: string): string {
    return createHmac('sha256', key.key).update(payload).digest('base64url')
  }
}

/** A requestState of the gateway's form, or an inputResponses entry under its key. */
function carriesOwnMembers(params: Params): boolean {
  const state = param(params, 'requestState')
  const responses = param(params, 'inputResponses')
  return (typeof state === 'string' && state.startsWith(REQUEST_STATE_PREFIX)) || (isObject(responses) && Object.hasOwn(responses, APPROVAL_INPUT_KEY))
}

/** The retry says the person did not open the page (`decline` or `cancel` in the gateway's inputResponses entry). */
function declined(params: Params): boolean {
  const responses = param(params, 'inputResponses')
  const mine = isObject(responses) ? responses[APPROVAL_INPUT_KEY] : undefined
  return isObject(mine) && (mine.action === 'decline' || mine.action === 'cancel')
}
