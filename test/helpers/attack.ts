/**
 * Tools for the attack suites (test/security): a raw-socket HTTP sender for
 * requests no well-behaved client would send, a node:http sender that can
 * pick its source address (127.0.0.2 is a different peer than 127.0.0.1),
 * a JWS signer that signs any header and payload with our own key, and one
 * running bearward with the e2e config plus whatever a suite adds.
 */
import { createHash, createPrivateKey, randomBytes, sign as cryptoSign, type JsonWebKey } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import { connect } from 'node:net'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { JWK } from 'jose'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { asConfig, DEMO_SECRET, demoHashes } from './as-config.js'
import { startBinOrCleanUp, tempConfig, type RunningBin } from './bin.js'
import { parseForms, type HtmlForm } from './browser.js'
import { startUpstream, type SeenRequest } from './upstream.js'
import { basic } from './client-auth.js'
import { configYaml, mergeConfig, yamlList, yamlTree, yamlValue } from './config-tree.js'
import { eventually, freePort, postForm } from './http.js'

/** Re-exported so suites that import them from here keep working; they live in http.ts and client-auth.ts. */
export { postForm } from './http.js'
export { basic } from './client-auth.js'

/** An answer read off a raw socket. `status` is 0 when nothing parseable came back. */
export interface RawResponse {
  status: number
  /** Lower-cased header names; repeated headers joined with `, `. */
  headers: Map<string, string>
  body: string
  /** Everything the server sent, latin1-decoded. */
  raw: string
  /** How many status lines the server sent (more than one means it answered a smuggled request too). */
  responses: number
}

function parseRaw(raw: string): RawResponse {
  const headerEnd = raw.indexOf('\r\n\r\n')
  const head = headerEnd === -1 ? raw : raw.slice(0, headerEnd)
  const lines = head.split('\r\n')
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')
  const headers = new Map<string, string>()
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    const name = line.slice(0, colon).trim().toLowerCase()
    const value = line.slice(colon + 1).trim()
    const prev = headers.get(name)
    headers.set(name, prev === undefined ? value : `${prev}, ${value}`)
  }
  return {
    status: m ? Number(m[1]) : 0,
    headers,
    body: headerEnd === -1 ? '' : raw.slice(headerEnd + 4),
    raw,
    responses: (raw.match(/HTTP\/1\.[01] \d{3} /g) ?? []).length,
  }
}

/**
 * Send `text` as is over TCP to the origin of `url` and collect what comes
 * back until the server closes, or `idleMs` passes without data once
 * something arrived (requests should say `Connection: close`).
 */
export function rawHttp(url: string, text: string | Buffer, o: { timeoutMs?: number; localAddress?: string } = {}): Promise<RawResponse> {
  const { hostname, port } = new URL(url)
  return new Promise((resolve) => {
    const socket = connect({ host: hostname, port: Number(port), ...(o.localAddress ? { localAddress: o.localAddress } : {}) })
    const chunks: Buffer[] = []
    let done = false
    const finish = (): void => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      resolve(parseRaw(Buffer.concat(chunks).toString('latin1')))
    }
    const timer = setTimeout(finish, o.timeoutMs ?? 3000)
    socket.on('data', (d: Buffer) => chunks.push(d))
    socket.on('end', finish)
    socket.on('close', finish)
    socket.on('error', finish)
    socket.write(text)
  })
}

/** A response from {@link send}. */
export interface SentResponse {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
  /** Set-Cookie lines. */
  cookies: string[]
}

/**
 * One HTTP request through node:http, which (unlike fetch) can choose the
 * source address: on Linux all of 127.0.0.0/8 is local, so 127.0.0.2 is a
 * second peer for tests of per-address rules and trusted proxies.
 */
export function send(url: string, o: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string } = {}): Promise<SentResponse> {
  const u = new URL(url)
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: o.method ?? 'GET',
        headers: { connection: 'close', ...(o.body !== undefined ? { 'content-length': String(Buffer.byteLength(o.body)) } : {}), ...o.headers },
        ...(o.localAddress ? { localAddress: o.localAddress } : {}),
      },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          const cookies = res.headers['set-cookie'] ?? []
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), cookies })
        })
      },
    )
    req.on('error', reject)
    if (o.body !== undefined) req.write(o.body)
    req.end()
  })
}

/** A fresh PKCE pair (RFC 7636 4.1, 4.2). */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

/** base64url of a JSON value (or of a string as is). */
export function b64url(value: unknown): string {
  return Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')
}

/**
 * A compact JWS over any protected header and payload (which may be
 * nonsense), signed ES256 with `jwk`. The header's `alg` is whatever the
 * caller writes: the signature is always ES256, which is the point of
 * several attacks.
 */
export function signEs256(jwk: JWK, header: Record<string, unknown>, payload: unknown): string {
  const key = createPrivateKey({ key: jwk as JsonWebKey, format: 'jwk' })
  const input = `${b64url(header)}.${b64url(payload)}`
  const signature = cryptoSign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' })
  return `${input}.${signature.toString('base64url')}`
}

/** Words that would mean an error answer leaks internals. */
export const INTERNAL_WORDS = /jose|JWS|JWT[A-Z]|stack|at [A-Za-z.]+ \(|node_modules|ERR_[A-Z_]+|TypeError|SyntaxError|\/work\//

/**
 * Options for {@link startTarget}: pieces of YAML as the suites write them,
 * each read into data and placed in the config by key.
 */
export interface TargetOptions {
  /** Extra list items for `authorization_server.clients` (`- client_id: ...`). */
  clients?: string
  /** Extra list items for `authorization_server.users`. */
  users?: string
  /** Extra routes (list items for `routes`), given the upstream's URL. */
  routes?: (upstream: string) => string
  /** `authorization_server.rate_limit` as flow YAML (e.g. `{ login_max_failures: 5, client_auth_max_failures: 1000 }`). */
  rateLimit?: string
  /** The `gateway:` section as flow YAML (e.g. `{ trusted_proxies: [127.0.0.1] }`). */
  gateway?: string
  /** `authorization_server.device` as flow YAML. */
  device?: string
  /** Extra top-level keys (e.g. `client_timeouts: { body_idle: 300ms }`). */
  top?: string
  format?: 'jwt' | 'opaque'
}

/** One running bearward (e2e config), its upstream and the private signing key it uses. */
export interface Target {
  bin: RunningBin
  /** Base URL, equal to public_url and the issuer. */
  url: string
  port: number
  /** What the upstream of the routes received. */
  upstream: { url: string; seen: SeenRequest[] }
  /** The private JWK bearward signs with (kid `k1`), so a test can forge tokens with the real key. */
  key: JWK
  /** Client secret of `web` and `service` (e2e config). */
  secret: string
  close(): Promise<void>
}

/**
 * Start bearward with the e2e config (clients web, cli, service; user alice;
 * route /orders) plus `o`, a known signing key and a recording upstream.
 */
export async function startTarget(o: TargetOptions = {}): Promise<Target> {
  const up = await startUpstream('upstream')
  const port = await freePort()
  const cfg = await tempConfig('')
  const key = await generatePrivateJwk('ES256', 'k1')
  const keyFile = join(cfg.dir, 'signing.jwk')
  await writeFile(keyFile, JSON.stringify(key))
  const config = await asConfig({ port, upstream: up.url, ...(o.format ? { format: o.format } : {}), routes: yamlList(o.routes?.(up.url) ?? '') })
  const as = config.authorization_server
  as.keys = [{ file: keyFile }]
  if (o.rateLimit) as.rate_limit = yamlValue(o.rateLimit)
  if (o.device) as.device = yamlValue(o.device)
  as.clients.push(...yamlList(o.clients ?? ''))
  as.users.push(...yamlList(o.users ?? ''))
  if (o.gateway) config.gateway = yamlValue(o.gateway)
  await writeFile(cfg.file, configYaml(o.top ? mergeConfig(config, yamlTree(o.top)) : config))
  const bin = await startBinOrCleanUp(cfg.file, async () => {
    await up.close()
    await cfg.cleanup()
  })
  return {
    bin,
    url: bin.url,
    port,
    upstream: up,
    key,
    secret: DEMO_SECRET,
    async close() {
      await bin.stop()
      await up.close()
      await cfg.cleanup()
    },
  }
}

/** The password hash of the demo password, for extra users. */
export async function demoPasswordHash(): Promise<string> {
  return (await demoHashes()).passwordHash
}

/** The secret hash of the demo secret, for extra clients. */
export async function demoSecretHash(): Promise<string> {
  return (await demoHashes()).secretHash
}

/** A client-credentials access token for `service` (scope orders:read). */
export async function serviceToken(target: Target, scope = 'orders:read'): Promise<string> {
  const res = await postForm(`${target.url}/token`, { grant_type: 'client_credentials', scope }, { authorization: basic('service', target.secret) })
  if (res.status !== 200) throw new Error(`client_credentials: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { access_token: string }).access_token
}

/** Claims of a valid access token for `target` (as its own AS would issue), valid for five minutes. */
export function accessClaims(target: Target, extra: Record<string, unknown> = {}): Record<string, unknown> {
  const now = Math.floor(Date.now() / 1000)
  return {
    iss: target.url,
    aud: target.url,
    sub: 'alice',
    client_id: 'web',
    scope: 'orders:read',
    iat: now,
    exp: now + 300,
    jti: randomBytes(12).toString('base64url'),
    ...extra,
  }
}

/** The protected header bearward writes on its access tokens. */
export const AT_HEADER: Readonly<Record<string, unknown>> = Object.freeze({ alg: 'ES256', typ: 'at+jwt', kid: 'k1' })

/** `/healthz` on the admin port answers 200. */
export async function healthy(target: Target): Promise<boolean> {
  try {
    return (await fetch(`${target.bin.admin}/healthz`)).status === 200
  } catch {
    return false
  }
}

/**
 * Poll `status` until it returns `want` or `ms` passes; returns the last
 * status seen (for effects that cross a pub/sub or another process).
 */
export async function eventuallyStatus(status: () => Promise<number>, want: number, ms = 2000): Promise<number> {
  let last = 0
  await eventually(async () => (last = await status()) === want, ms)
  return last
}

/** A login form as a browser gets it from /authorize (client `web` of the e2e config): its fields and the pre-session CSRF cookie. */
export interface LoginForm {
  form: HtmlForm
  /** `bw_csrf=...`, for the Cookie header. */
  cookie: string
}

/** Open a login page at `base` (an e2e-config bearward) the way a browser would. */
export async function openLoginForm(base: string, redirectUri = 'http://127.0.0.1:5555/callback'): Promise<LoginForm> {
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: redirectUri,
    scope: 'orders:read',
    state: 's',
    code_challenge: pkce().challenge,
    code_challenge_method: 'S256',
  })
  const url = `${base}/authorize?${q}`
  const page = await send(url)
  const form = parseForms(page.body, url).find((f) => 'csrf' in f.fields)
  if (!form) throw new Error(`no login form at ${base} (${page.status})`)
  const csrf = page.cookies.find((c) => c.startsWith('bw_csrf='))
  return { form, cookie: csrf?.slice(0, csrf.indexOf(';')) ?? '' }
}

/**
 * POST a login form as if from client address `ip` (sent as X-Forwarded-For:
 * bearward must trust 127.0.0.1 as a proxy), optionally from a browser
 * holding `known` (a `bw_known=...` cookie pair).
 */
export function postLogin(base: string, login: LoginForm, username: string, password: string, ip: string, known?: string): Promise<SentResponse> {
  return send(`${base}/login`, {
    method: 'POST',
    body: new URLSearchParams({ ...login.form.fields, username, password }).toString(),
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: base,
      cookie: known ? `${login.cookie}; ${known}` : login.cookie,
      'x-forwarded-for': ip,
    },
  })
}
