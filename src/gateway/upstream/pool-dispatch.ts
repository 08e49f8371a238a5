import type { IncomingHttpHeaders } from 'node:http'
import type { Dispatcher } from 'undici'
import type { FlatHeaders } from '../flat-headers.js'
import type { Balancer } from './balancer.js'
import { errorCode } from './failure.js'
import type { Target } from './targets.js'

/**
 * RFC 9110 9.2.2: the idempotent methods, the only ones sent again. PUT and
 * DELETE are among them, and are retried too: a retry only ever follows a
 * connection that was never made, so nothing of the first attempt reached
 * the upstream. POST and PATCH are never sent twice, even then.
 */
const IDEMPOTENT: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'])

/** Errors that mean no connection to the target could be made (before undici wrote a byte of the request). */
const CONNECT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
])

/** A failure to connect at all (nothing reached the target): what ejects a target and allows a retry. */
export function isConnectFailure(code: string): boolean {
  return CONNECT_CODES.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || code.includes('CERT')
}

/** A request to a pool as the proxy builds it; the Host and TLS name are each target's. */
export type PoolRequest = Dispatcher.DispatchOptions & { servername?: string | undefined; headers: FlatHeaders }

/** Whether a request may be sent again after a connect failure: idempotent, and its body (if any) held in memory. */
export function mayRetry(method: string, body: unknown): boolean {
  return IDEMPOTENT.has(method) && (body === null || Buffer.isBuffer(body))
}

/**
 * One request to a pooled route (balancer.ts): the target the balancer
 * picks gets it; when that target cannot be connected to, the failure
 * counts against its health and, for a request `mayRetry` allows, the
 * request goes to another target, each target at most once. undici calls
 * onRequestStart on a connected socket just before it writes the request,
 * so an error before it is one nothing of the request went out with; an
 * error after it is never retried, whatever the method. Everything else is
 * the Exchange's (exchange.ts), which answers the client.
 */
export class PoolDispatch implements Dispatcher.DispatchHandler {
  readonly #balancer: Balancer
  readonly #exchange: Dispatcher.DispatchHandler & { upstream: string | null }
  readonly #request: PoolRequest
  readonly #retry: boolean
  /** Whether the client can still be answered: no retry for a client that left. */
  readonly #wanted: () => boolean
  #tried: Set<Target> | null = null
  #target: Target | null = null
  #started = false
  /** Attempts made; bounded by the number of targets. */
  attempts = 0

  constructor(balancer: Balancer, exchange: Dispatcher.DispatchHandler & { upstream: string | null }, request: PoolRequest, wanted: () => boolean) {
    this.#balancer = balancer
    this.#exchange = exchange
    this.#request = request
    this.#retry = mayRetry(request.method, request.body ?? null)
    this.#wanted = wanted
  }

  /** Send to the first target; false when the pool has none (every name unresolved and nothing to dial). */
  dispatch(): boolean {
    const target = this.#balancer.pick(this.#tried)
    if (target === null) return false
    this.#target = target
    this.#exchange.upstream = target.label
    this.attempts++
    target.health.inFlight++
    const headers = target.hostHeader === null || hasHost(this.#request.headers) ? this.#request.headers : [...this.#request.headers, 'host', target.hostHeader]
    target.pool.dispatch({ ...this.#request, headers, servername: target.servername } as Dispatcher.DispatchOptions, this)
    return true
  }

  #settle(): Target | null {
    const target = this.#target
    if (target !== null) target.health.inFlight--
    this.#target = null
    return target
  }

  onRequestStart(controller: Dispatcher.DispatchController, context: unknown): void {
    this.#started = true
    this.#exchange.onRequestStart?.(controller, context)
  }

  onResponseStart(controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders, statusText?: string): void {
    if (statusCode >= 200) this.#target?.health.answered()
    this.#exchange.onResponseStart?.(controller, statusCode, headers, statusText)
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#exchange.onResponseData?.(controller, chunk)
  }

  onResponseEnd(controller: Dispatcher.DispatchController, trailers: IncomingHttpHeaders): void {
    this.#settle()
    this.#exchange.onResponseEnd?.(controller, trailers)
  }

  onResponseError(controller: Dispatcher.DispatchController, err: Error): void {
    const target = this.#settle()
    const code = errorCode(err)
    if (!this.#started && target !== null && isConnectFailure(code)) {
      target.connectFailed(code)
      if (this.#retry && this.#wanted()) {
        this.#tried ??= new Set()
        this.#tried.add(target)
        if (this.attempts < this.#balancer.maxAttempts && this.dispatch()) return
      }
    }
    this.#exchange.onResponseError?.(controller, err)
  }
}

function hasHost(headers: FlatHeaders): boolean {
  for (let i = 0; i < headers.length; i += 2) if (String(headers[i]).toLowerCase() === 'host') return true
  return false
}
