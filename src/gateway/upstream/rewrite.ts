import type { ServerResponse } from 'node:http'

/**
 * What may change an upstream answer on its way to the client (the MCP list
 * filter): it writes the head, the chunks and the end in place of the
 * exchange. A throw from writeHead or write ends the exchange as an upstream
 * failure (502 before the head went out, a reset after); a throw from end
 * likewise.
 */
export interface ResponseRewriter {
  /** `headers`: the flat `[name, value, ...]` list the proxy relays (gateway/flat-headers.ts). */
  writeHead(res: ServerResponse, status: number, statusText: string | undefined, headers: string[]): void
  /** false: the client is full (res.write's answer), the upstream waits for drain. */
  write(res: ServerResponse, chunk: Buffer): boolean
  end(res: ServerResponse): void
}
