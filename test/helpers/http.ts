/**
 * The small network helpers every kind of test needs, once: a free port for
 * a process that cannot bind port 0 itself, and a bounded poll for effects
 * that happen in another process or after a message crosses a connection.
 */
import { createServer, type AddressInfo } from 'node:net'

/**
 * A TCP port on 127.0.0.1 that was free a moment ago. Only for programs that
 * cannot be told to bind port 0 and report it (redis-server); anything of
 * ours listens on port 0 instead, since another process may take the port
 * between this call and the bind.
 */
export async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject)
    s.listen(0, '127.0.0.1', resolve)
  })
  const { port } = s.address() as AddressInfo
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

/**
 * Poll `check` every `stepMs` until it holds or `ms` passes; resolves to
 * whether it held (assert on that). For effects of another process, of
 * pub/sub, or of a file watcher, which no event in this process announces.
 * `check` is called once more at the deadline, so a slow machine that
 * misses every step still gets a final answer.
 */
export async function eventually(check: () => boolean | Promise<boolean>, ms = 5000, stepMs = 20): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, stepMs))
  }
  return check()
}

/**
 * POST `params` as application/x-www-form-urlencoded (pairs, so a name can
 * repeat), without following redirects: a test sees the 302/303 itself.
 */
export function postForm(url: string, params: Record<string, string> | Array<[string, string]>, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(params).toString(),
  })
}

/** An answer read to the end: status, headers, the body as text and, when it is JSON, parsed. */
export interface Reply {
  status: number
  headers: Headers
  text: string
  /** The parsed JSON body, or null when the body is not JSON. */
  json: Record<string, unknown> | null
}

/** Read a response to the end (e.g. `await reply(postForm(...))`). */
export async function reply(response: Response | Promise<Response>): Promise<Reply> {
  const res = await response
  const text = await res.text()
  let json: Record<string, unknown> | null = null
  try {
    json = JSON.parse(text) as Record<string, unknown>
  } catch {
    json = null
  }
  return { status: res.status, headers: res.headers, text, json }
}
