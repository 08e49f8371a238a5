import type { IncomingMessage } from 'node:http'
import { randomBytes } from 'node:crypto'
import { performance } from 'node:perf_hooks'
import type { RequestContext, ResponseCloseListener } from '../context.js'
import { splitTarget } from '../http/request-target.js'
import type { Logger } from '../log.js'
import type { Runtime } from '../runtime.js'
import type { RequestTrace, Tracing } from '../telemetry/tracing.js'

/** A request id we echo must be short and plain, so it cannot forge log lines or headers. */
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** Request ids: a random per-process prefix and a counter; unique without a CSPRNG call per request. */
export class RequestIds {
  readonly #prefix = randomBytes(6).toString('hex')
  #counter = 0

  /**
   * The request's Context: its id (the client's X-Request-Id when
   * `trust_incoming_request_id` is on and the value is plain, else ours) and
   * the one split of its target both faces read.
   */
  contextFor(req: IncomingMessage, trustIncoming: boolean, root: Logger, tracing: Tracing): Context {
    // One split of the target for both faces (origin- or absolute-form).
    const target = splitTarget(req.url ?? '/')
    const incoming = req.headers['x-request-id']
    const id = trustIncoming && typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : this.#next()
    return new Context(id, root, target.rawPath, target.rawQuery, target.host, tracing.start(req))
  }

  #next(): string {
    this.#counter = (this.#counter + 1) % Number.MAX_SAFE_INTEGER
    return `${this.#prefix}-${this.#counter.toString(36)}`
  }
}

/**
 * RequestContext with a lazily bound child logger: most requests never log
 * anything but the access line, and binding costs a serialization.
 */
export class Context implements RequestContext {
  readonly id: string
  readonly rawPath: string
  readonly rawQuery: string
  readonly targetHost: string | null
  routeLabel = 'unmatched'
  readonly trace: RequestTrace
  httpRoute: string | null = null
  clientId: string | null = null
  sub: string | null = null
  refusal: string | null = null
  closeListener: ResponseCloseListener | null = null
  /** performance.now() at arrival, for the latency metric and the access log. */
  readonly started = performance.now()
  /** The Runtime whose drain count the request is in, until it departs. */
  runtime: Runtime | null = null
  readonly #root: Logger
  #log: Logger | null = null

  constructor(id: string, root: Logger, rawPath: string, rawQuery: string, targetHost: string | null, trace: RequestTrace) {
    this.id = id
    this.trace = trace
    this.#root = root
    this.rawPath = rawPath
    this.rawQuery = rawQuery
    this.targetHost = targetHost
  }

  get log(): Logger {
    this.#log ??= this.#root.child({ req_id: this.id })
    return this.#log
  }
}
