import type { IncomingMessage } from 'node:http'
import { ClientAborted, InvalidRequest, PayloadTooLarge } from '../errors.js'
import { continueIfExpected } from './expect-continue.js'

/** Largest form body accepted at the authorization server's endpoints. */
export const AS_BODY_LIMIT = 64 * 1024

/**
 * Read a whole request body, refusing more than `limit` bytes (413) before
 * buffering it. A declared Content-Length over the limit is refused without
 * reading. A client waiting for `100 Continue` gets it here, when the body is
 * actually wanted.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers['content-length']
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(new PayloadTooLarge())
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0))
  continueIfExpected(req)
  // Plain events rather than `for await`: an async iterator per request
  // costs more than the small form bodies it would read.
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const stop = (): void => {
      req.off('data', onData)
      req.off('end', onEnd)
      req.off('error', onError)
      req.off('close', onClose)
    }
    const onData = (chunk: Buffer): void => {
      size += chunk.length
      if (size > limit) {
        stop()
        // Drain the rest so the connection can answer 413 and carry on.
        req.resume()
        reject(new PayloadTooLarge())
        return
      }
      chunks.push(chunk)
    }
    const onEnd = (): void => {
      stop()
      resolve(Buffer.concat(chunks, size))
    }
    const onError = (err: Error): void => {
      stop()
      // The request stream fails only when its connection does (Node's
      // 'aborted' ECONNRESET): the client went away mid-body, not a bug here.
      reject(req.complete ? err : new ClientAborted({ cause: err }))
    }
    const onClose = (): void => {
      stop()
      // The client left, or its body timed out (answered 408 already): a
      // refusal, not a server fault.
      reject(new InvalidRequest('The request body ended before it was complete'))
    }
    req.on('data', onData)
    req.on('end', onEnd)
    req.on('error', onError)
    req.on('close', onClose)
  })
}

/** True when the Content-Type's media type is application/x-www-form-urlencoded. */
export function isFormContentType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  const semi = contentType.indexOf(';')
  const media = (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase()
  return media === 'application/x-www-form-urlencoded'
}

/**
 * Read and parse a form body (RFC 6749 3.2: the token endpoint takes
 * application/x-www-form-urlencoded; other media types are invalid_request).
 */
export async function readForm(req: IncomingMessage, limit = AS_BODY_LIMIT): Promise<FormParams> {
  if (!isFormContentType(req.headers['content-type'])) {
    throw new InvalidRequest('Content-Type must be application/x-www-form-urlencoded')
  }
  const body = await readBody(req, limit)
  return FormParams.parse(body.toString('utf8'))
}

/**
 * Parsed `application/x-www-form-urlencoded` or query parameters that keep
 * every occurrence, so a repeated parameter can be refused (RFC 6749 3.1,
 * 3.2: "Request and response parameters MUST NOT be included more than once").
 */
export class FormParams {
  readonly #values: Map<string, string[]>

  private constructor(values: Map<string, string[]>) {
    this.#values = values
  }

  static parse(text: string): FormParams {
    const values = new Map<string, string[]>()
    for (const [name, value] of new URLSearchParams(text)) {
      const list = values.get(name)
      if (list === undefined) values.set(name, [value])
      else list.push(value)
    }
    return new FormParams(values)
  }

  /**
   * The single value of `name`, or undefined when absent. An empty value is
   * treated as absent (RFC 6749 3.1). Repeated: invalid_request.
   */
  get(name: string): string | undefined {
    const list = this.#values.get(name)
    if (list === undefined) return undefined
    if (list.length > 1) throw new InvalidRequest(`Parameter ${name} is repeated`)
    const value = list[0]
    return value === '' ? undefined : value
  }

  /** Every non-empty value of `name`, for the parameters that may repeat (RFC 8707 `resource`). */
  getAll(name: string): string[] {
    return (this.#values.get(name) ?? []).filter((v) => v !== '')
  }

  /** Like get(), but a missing value is invalid_request. */
  require(name: string): string {
    const value = this.get(name)
    if (value === undefined) throw new InvalidRequest(`Parameter ${name} is required`)
    return value
  }

  has(name: string): boolean {
    return this.#values.has(name)
  }

  /** Throw invalid_request if any of `names` occurs more than once. */
  assertNoRepeats(names: Iterable<string>): void {
    for (const name of names) {
      const list = this.#values.get(name)
      if (list !== undefined && list.length > 1) throw new InvalidRequest(`Parameter ${name} is repeated`)
    }
  }

  names(): IterableIterator<string> {
    return this.#values.keys()
  }
}
