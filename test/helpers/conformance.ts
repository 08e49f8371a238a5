/**
 * Helpers for the conformance suites (test/conformance/): a running bearward
 * configured the way the suites need it, a strict parser for
 * `WWW-Authenticate` (RFC 9110 11.6.1 + RFC 6750 3), checks of OAuth error
 * bodies (RFC 6749 5.2), at_hash (OIDC Core 3.1.3.6), a loopback redirect
 * receiver (RFC 8252 7.3) and a person approving a device code (RFC 8628 3.3).
 *
 * Everything here is written from the RFCs, not from src/: the point of these
 * suites is to judge the product from the outside.
 */
import { createHash, randomBytes } from 'node:crypto'
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose'
import { startBinOrCleanUp, tempConfig, type RunningBin } from './bin.js'
import { Browser, authorizeAsPerson, parseForms } from './browser.js'
import { basic } from './client-auth.js'
import { jsonTree } from './config-tree.js'
import { asConfig, demoHashes, DEMO_PASSWORD, DEMO_SECRET } from './as-config.js'
import { startUpstream } from './upstream.js'
import { closeServer, freePort, postForm, listen } from './http.js'

/** Re-exported so suites that import it from here keep working; it lives in http.ts. */
export { postForm } from './http.js'

/** The person every conformance flow logs in as (as-config.ts). */
export const ALICE = { username: 'alice', password: DEMO_PASSWORD } as const

/** Registered redirect URI of the confidential `web` client (as-config.ts). */
export const WEB_REDIRECT_URI = 'http://127.0.0.1:5555/callback'

/** A confidential client registered for client_secret_post (the only one that may use it). */
export const POST_CLIENT_ID = 'poster'
/** A confidential client that authenticates with `private_key_jwt` (RFC 7523 2.2), its key made once per test process. */
export const KEY_CLIENT_ID = 'keyed'
const keyedClientKeys = generateKeyPair('ES256', { extractable: true })

/**
 * The client authentication members for KEY_CLIENT_ID at `endpoint`: a fresh
 * assertion (iss = sub = client_id, aud = the endpoint, single-use jti, 60 s).
 */
export async function keyedClientAuth(endpoint: string): Promise<Record<string, string>> {
  const { privateKey } = await keyedClientKeys
  const assertion = await new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: 'keyed-1' })
    .setIssuer(KEY_CLIENT_ID)
    .setSubject(KEY_CLIENT_ID)
    .setAudience(endpoint)
    .setJti(randomBytes(16).toString('base64url'))
    .setIssuedAt()
    .setExpirationTime('60s')
    .sign(privateKey)
  return { client_id: KEY_CLIENT_ID, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion }
}

export interface ConformanceServerOptions {
  /** Path of the issuer identifier (`/auth` gives public_url http://127.0.0.1:PORT/auth). */
  issuerPath?: string
  /** Private JWKs for `authorization_server.keys`; none: the product's ephemeral default key. */
  keys?: JWK[]
}

export interface ConformanceServer {
  bin: RunningBin
  /** The issuer identifier exactly as configured (public_url). */
  issuer: string
  /** Origin the server listens on (`http://127.0.0.1:PORT`). */
  origin: string
  upstream: Awaited<ReturnType<typeof startUpstream>>
  close(): Promise<void>
}

/**
 * Start bearward with the e2e config (as-config.ts) plus what conformance
 * needs: a 1 s device polling interval (RFC 8628 3.2) so a polling library
 * finishes quickly, and a `poster` client registered for client_secret_post
 * that may introspect.
 */
export async function startConformanceServer(o: ConformanceServerOptions = {}): Promise<ConformanceServer> {
  const upstream = await startUpstream('orders')
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const issuer = origin + (o.issuerPath ?? '')
  const { secretHash } = await demoHashes()
  const keyedPublic = { ...(await exportJWK((await keyedClientKeys).publicKey)), kid: 'keyed-1', alg: 'ES256', use: 'sig' }
  const config = await asConfig({ port, upstream: upstream.url })
  config.public_url = issuer
  const as = config.authorization_server
  as.device = { ttl: '2m', interval: '1s' }
  if (o.keys) as.keys = o.keys.map((k) => ({ jwk: jsonTree(k) }))
  as.clients.unshift(
    {
      client_id: POST_CLIENT_ID,
      type: 'confidential',
      secret_hash: secretHash,
      token_endpoint_auth_method: 'client_secret_post',
      grant_types: ['client_credentials'],
      scopes: ['orders:read'],
      introspect: true,
    },
    {
      client_id: KEY_CLIENT_ID,
      type: 'confidential',
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: { keys: [jsonTree(keyedPublic)] },
      grant_types: ['client_credentials'],
      scopes: ['orders:read'],
      introspect: true,
    },
  )
  const cfg = await tempConfig(config)
  const bin = await startBinOrCleanUp(cfg.file, async () => {
    await upstream.close()
    await cfg.cleanup()
  })
  return {
    bin,
    issuer,
    origin,
    upstream,
    close: async () => {
      await bin.stop()
      await upstream.close()
      await cfg.cleanup()
    },
  }
}

/** A private JWK with kid and alg, as `bearward keys generate` would print one. */
export async function privateJwk(alg: 'RS256' | 'ES256' | 'PS256' | 'ES384' | 'EdDSA', kid: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true })
  return { ...(await exportJWK(privateKey)), kid, alg }
}

// ---------------------------------------------------------------------------
// WWW-Authenticate (RFC 9110 11.6.1, RFC 6750 3)

/** One challenge: the scheme as sent and its auth-params (names lower-cased). */
export interface Challenge {
  scheme: string
  params: Record<string, string>
}

/** The header does not follow the grammar; `at` is the offset where parsing stopped. */
export class ChallengeSyntaxError extends Error {
  constructor(
    readonly header: string,
    readonly at: number,
    reason: string,
  ) {
    super(`${reason} at offset ${at} of ${JSON.stringify(header)}`)
    this.name = 'ChallengeSyntaxError'
  }
}

/** RFC 9110 5.6.2 tchar. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+/
/** RFC 9110 5.6.4 qdtext without obs-text (a server has no reason to send octets above 0x7e). */
const QDTEXT = /^[\t \x21\x23-\x5b\x5d-\x7e]/
const OWS = /^[ \t]*/

/**
 * Parse a `WWW-Authenticate` value strictly:
 *
 *     WWW-Authenticate = 1#challenge
 *     challenge  = auth-scheme [ 1*SP #auth-param ]
 *     auth-param = token BWS "=" BWS quoted-string
 *
 * Stricter than RFC 9110 on purpose, following RFC 6750 3, whose ABNF gives
 * every Bearer attribute as a quoted-string: unquoted token values and
 * token68 are refused, and an attribute repeated within one challenge is an
 * error (RFC 6750 3: "MUST NOT appear more than once").
 *
 * @throws ChallengeSyntaxError
 */
export function parseChallenges(header: string): Challenge[] {
  const challenges: Challenge[] = []
  let i = 0
  const fail = (reason: string): never => {
    throw new ChallengeSyntaxError(header, i, reason)
  }
  const skip = (re: RegExp): string => {
    const m = re.exec(header.slice(i))
    const s = m?.[0] ?? ''
    i += s.length
    return s
  }
  /** Skip list separators: OWS "," OWS, possibly repeated (RFC 9110 5.6.1 allows empty elements). */
  const separators = (): number => {
    let commas = 0
    for (;;) {
      skip(OWS)
      if (header[i] !== ',') return commas
      i++
      commas++
    }
  }
  const quoted = (): string => {
    if (header[i] !== '"') fail('expected a quoted-string')
    i++
    let value = ''
    for (;;) {
      const c = header[i]
      if (c === undefined) fail('unterminated quoted-string')
      if (c === '"') {
        i++
        return value
      }
      if (c === '\\') {
        const next = header[i + 1]
        if (next === undefined || !/[\t \x21-\x7e]/.test(next)) fail('bad quoted-pair')
        value += next
        i += 2
        continue
      }
      if (!QDTEXT.test(c as string)) fail(`character 0x${(c as string).charCodeAt(0).toString(16)} not allowed in a quoted-string`)
      value += c
      i++
    }
  }

  if (header.trim() === '') fail('empty header')
  separators()
  while (i < header.length) {
    const scheme = skip(TOKEN)
    if (scheme === '') fail('expected an auth-scheme token')
    const params: Record<string, string> = {}
    challenges.push({ scheme, params })
    if (i >= header.length) break
    if (header[i] === ',') {
      separators()
      continue
    }
    if (skip(/^ +/) === '') fail('expected SP after the auth-scheme')
    // #auth-param, until a new challenge starts (a token not followed by "=").
    for (;;) {
      const before = i
      const name = skip(TOKEN)
      if (name === '') fail('expected an auth-param name')
      skip(OWS)
      if (header[i] !== '=') {
        if (Object.keys(params).length === 0) fail('token68 or a bare token where an auth-param belongs')
        // The start of the next challenge.
        i = before
        break
      }
      i++
      skip(OWS)
      const key = name.toLowerCase()
      if (key in params) fail(`auth-param ${name} repeated`)
      params[key] = quoted()
      skip(OWS)
      if (i >= header.length) break
      if (header[i] !== ',') fail('expected "," between auth-params')
      separators()
      if (i >= header.length) break
    }
  }
  return challenges
}

/** RFC 6749 A.7 / A.8 and RFC 6750 3: NQSCHAR, the characters allowed in error and error_description. */
export const NQSCHAR = /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/
/** RFC 6750 3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ). */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/**
 * What is wrong with a Bearer challenge per RFC 6750 3 (empty when nothing):
 * scheme Bearer, only one of each attribute (checked by the parser), error
 * and error_description in NQSCHAR, scope a space-separated list of
 * scope-tokens, error_uri an absolute URI.
 */
export function bearerChallengeProblems(c: Challenge): string[] {
  const problems: string[] = []
  if (c.scheme.toLowerCase() !== 'bearer') problems.push(`scheme is ${c.scheme}, not Bearer`)
  const { error, error_description: description, error_uri: uri, scope } = c.params
  if (error !== undefined && (error === '' || !NQSCHAR.test(error))) problems.push(`error ${JSON.stringify(error)} is not 1*NQSCHAR`)
  if (description !== undefined && !NQSCHAR.test(description)) problems.push(`error_description ${JSON.stringify(description)} has characters outside NQSCHAR`)
  if (scope !== undefined && !scope.split(' ').every((s) => SCOPE_TOKEN.test(s))) problems.push(`scope ${JSON.stringify(scope)} is not a list of scope-tokens`)
  if (uri !== undefined && !URL.canParse(uri)) problems.push(`error_uri ${JSON.stringify(uri)} is not an absolute URI`)
  return problems
}

// ---------------------------------------------------------------------------
// Error responses (RFC 6749 5.2, RFC 6750 3.1)

export interface ErrorResponse {
  status: number
  headers: Headers
  /** The parsed JSON body, or null when the body is not JSON. */
  body: Record<string, unknown> | null
  rawBody: string
  /** Parsed WWW-Authenticate, or null when absent or unparsable (see problems). */
  challenges: Challenge[] | null
  /** Every conformance problem found, in words; empty when the response conforms. */
  problems: string[]
}

/** True when the media type of a Content-Type value is `application/json` (parameters allowed). */
export function isJsonMediaType(contentType: string | null): boolean {
  return contentType !== null && /^application\/json\s*(;|$)/i.test(contentType)
}

/**
 * Read an error response and list how it departs from RFC 6749 5.2 (JSON
 * object, `error` a 1*NQSCHAR string, optional error_description in NQSCHAR,
 * optional error_uri URI) and, for 401 and 403, RFC 6750 3 / RFC 9110 11.6.1
 * (a parsable `WWW-Authenticate`, Bearer attributes well formed, the
 * challenge's error equal to the body's).
 */
export async function readErrorResponse(res: Response, expect: { status: number; error: string | null; scheme?: 'Basic' | 'Bearer' }): Promise<ErrorResponse> {
  const problems: string[] = []
  const rawBody = await res.text()
  let body: Record<string, unknown> | null = null
  if (!isJsonMediaType(res.headers.get('content-type'))) problems.push(`Content-Type is ${String(res.headers.get('content-type'))}, not application/json`)
  try {
    const parsed: unknown = JSON.parse(rawBody)
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) body = parsed as Record<string, unknown>
    else problems.push('body is not a JSON object')
  } catch {
    problems.push(`body is not JSON: ${JSON.stringify(rawBody.slice(0, 200))}`)
  }
  if (res.status !== expect.status) problems.push(`status ${res.status}, expected ${expect.status}`)
  if (body !== null) {
    const { error, error_description: description, error_uri: uri } = body
    if (expect.error !== null) {
      if (typeof error !== 'string' || error === '' || !NQSCHAR.test(error)) problems.push(`error ${JSON.stringify(error)} is not a 1*NQSCHAR string`)
      else if (error !== expect.error) problems.push(`error is ${error}, expected ${expect.error}`)
    }
    if (description !== undefined && (typeof description !== 'string' || !NQSCHAR.test(description))) {
      problems.push(`error_description ${JSON.stringify(description)} has characters outside %x20-21 / %x23-5B / %x5D-7E`)
    }
    if (uri !== undefined && (typeof uri !== 'string' || !URL.canParse(uri))) problems.push(`error_uri ${JSON.stringify(uri)} is not a URI`)
  }

  let challenges: Challenge[] | null = null
  const header = res.headers.get('www-authenticate')
  if (header === null) {
    if (res.status === 401 || expect.scheme !== undefined) problems.push('no WWW-Authenticate header')
  } else {
    try {
      challenges = parseChallenges(header)
    } catch (err) {
      problems.push(`WWW-Authenticate does not parse: ${(err as Error).message}`)
    }
  }
  if (challenges !== null) {
    const wanted = expect.scheme ?? 'Bearer'
    const c = challenges.find((x) => x.scheme.toLowerCase() === wanted.toLowerCase())
    if (c === undefined) problems.push(`no ${wanted} challenge in ${JSON.stringify(header)}`)
    else if (wanted === 'Bearer') {
      problems.push(...bearerChallengeProblems(c))
      if (expect.error === null && c.params.error !== undefined)
        problems.push(`a request without credentials got error="${c.params.error}" (RFC 6750 3.1 SHOULD NOT)`)
      if (expect.error !== null && c.params.error !== expect.error) problems.push(`challenge error is ${String(c.params.error)}, expected ${expect.error}`)
      if (body !== null && expect.error !== null && body.error !== c.params.error) problems.push('the challenge and the body name different errors')
    }
  }
  return { status: res.status, headers: res.headers, body, rawBody, challenges, problems }
}

// ---------------------------------------------------------------------------
// OIDC Core 3.1.3.6 at_hash

/** The hash an ID token's `alg` implies for at_hash (the SHA-2 of the JWS algorithm; Ed25519 uses SHA-512). */
function hashForAlg(alg: string): 'sha256' | 'sha384' | 'sha512' {
  if (alg === 'EdDSA' || alg === 'Ed25519' || /512$/.test(alg)) return 'sha512'
  if (/384$/.test(alg)) return 'sha384'
  return 'sha256'
}

/** at_hash = base64url(left half of HASH(ASCII(access_token))), HASH chosen by the ID token's alg. */
export function expectedAtHash(accessToken: string, alg: string): string {
  const digest = createHash(hashForAlg(alg)).update(Buffer.from(accessToken, 'ascii')).digest()
  return digest.subarray(0, digest.length / 2).toString('base64url')
}

/** The protected header of a compact JWS, decoded (no verification: only for reading alg and kid). */
export function jwsHeader(jws: string): Record<string, unknown> {
  const [segment] = jws.split('.')
  return JSON.parse(Buffer.from(segment ?? '', 'base64url').toString('utf8')) as Record<string, unknown>
}

// ---------------------------------------------------------------------------
// Native-app loopback redirect (RFC 8252 7.3)

export interface LoopbackReceiver {
  /** `http://127.0.0.1:<random port>/callback` */
  redirectUri: string
  /** The first request that arrives at the callback, as a Request a client library can take. */
  received: Promise<Request>
  close(): Promise<void>
}

/**
 * What a desktop app does for RFC 8252 7.3: listen on a random loopback port
 * and wait for the browser to bring the authorization response.
 */
export async function startLoopbackReceiver(): Promise<LoopbackReceiver> {
  let deliver!: (r: Request) => void
  const received = new Promise<Request>((r) => (deliver = r))
  const server = createServer((req, res) => {
    const { port } = server.address() as AddressInfo
    deliver(new Request(new URL(req.url ?? '/', `http://127.0.0.1:${port}`)))
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.end('You can close this window.')
  })
  const { port } = await listen(server)
  return {
    redirectUri: `http://127.0.0.1:${port}/callback`,
    received,
    close: () => closeServer(server),
  }
}

// ---------------------------------------------------------------------------
// Device authorization: the person's side (RFC 8628 3.3)

/**
 * A person opens `verification_uri_complete` in a browser, confirms the
 * code, logs in and allows or denies. Returns the text of the last page.
 */
export async function personDecidesDevice(verificationUriComplete: string, decision: 'allow' | 'deny' = 'allow'): Promise<string> {
  const browser = new Browser()
  const origin = new URL(verificationUriComplete).origin
  let { res, url } = await browser.follow(await browser.get(verificationUriComplete), verificationUriComplete, origin)
  for (let step = 0; step < 6; step++) {
    const html = await res.text()
    if (res.status !== 200) throw new Error(`device page answered ${res.status}: ${html.slice(0, 300)}`)
    const forms = parseForms(html, url).filter((f) => f.method === 'POST')
    const login = forms.find((f) => 'password' in f.fields)
    const consent = forms.find((f) => f.buttons.some((b) => b.name === 'decision'))
    const confirm = forms.find((f) => 'user_code' in f.fields)
    let sent: Response
    if (login) sent = await browser.submit(login, { username: ALICE.username, password: ALICE.password })
    else if (consent) sent = await browser.submit(consent, { decision })
    else if (confirm) {
      const button = confirm.buttons[0]
      sent = await browser.submit(confirm, button ? { [button.name]: button.value } : {})
    } else return html
    ;({ res, url } = await browser.follow(sent, url, origin))
  }
  throw new Error('the device page flow did not finish within 6 pages')
}

// ---------------------------------------------------------------------------
// Small HTTP helpers

/** The `Authorization: Basic` header of client-auth.ts, as a headers object to spread. */
export function basicAuth(clientId: string, secret: string): Record<string, string> {
  return { authorization: basic(clientId, secret) }
}

/**
 * Send a request whose headers fetch cannot express (a header field
 * repeated on separate lines: `headers: { authorization: ['a', 'b'] }`), and
 * return the answer as a fetch Response.
 */
export function rawRequest(url: string, method: string, headers: Record<string, string | string[]>): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const h = new Headers()
        for (let i = 0; i < res.rawHeaders.length; i += 2) h.append(res.rawHeaders[i] ?? '', res.rawHeaders[i + 1] ?? '')
        resolve(new Response(Buffer.concat(chunks), { status: res.statusCode ?? 0, headers: h }))
      })
      res.on('error', reject)
    })
    // setHeader with an array writes one header line per value.
    for (const [name, value] of Object.entries(headers)) req.setHeader(name, value)
    req.on('error', reject)
    req.end()
  })
}

export interface WebLogin {
  /** The whole token response. */
  tokens: Record<string, unknown>
  accessToken: string
  refreshToken: string
  idToken: string
}

/**
 * A complete code + PKCE flow for the confidential `web` client in raw HTTP
 * (RFC 6749 4.1, RFC 7636): Alice logs in and allows, the code is exchanged
 * with client_secret_basic. Each call uses a fresh browser.
 */
export async function webLogin(endpoints: { authorization_endpoint: string; token_endpoint: string }, scope: string): Promise<WebLogin> {
  const verifier = randomBytes(32).toString('base64url')
  const state = randomBytes(16).toString('base64url')
  const url = `${endpoints.authorization_endpoint}?${new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: WEB_REDIRECT_URI,
    scope,
    state,
    nonce: randomBytes(16).toString('base64url'),
    code_challenge: createHash('sha256').update(verifier, 'ascii').digest('base64url'),
    code_challenge_method: 'S256',
  })}`
  const callback = await authorizeAsPerson(new Browser(), url, ALICE)
  if (callback.searchParams.get('state') !== state) throw new Error('state changed on the way back')
  const res = await postForm(
    endpoints.token_endpoint,
    { grant_type: 'authorization_code', code: callback.searchParams.get('code') ?? '', redirect_uri: WEB_REDIRECT_URI, code_verifier: verifier },
    basicAuth('web', DEMO_SECRET),
  )
  const tokens = (await res.json()) as Record<string, unknown>
  if (res.status !== 200) throw new Error(`code exchange answered ${res.status} ${String(tokens.error)}`)
  return { tokens, accessToken: String(tokens.access_token), refreshToken: String(tokens.refresh_token), idToken: String(tokens.id_token) }
}
