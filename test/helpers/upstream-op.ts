/**
 * Upstream OpenID providers for the identity-provider tests, on real HTTP
 * servers on 127.0.0.1 port 0:
 * - a real one, node-oidc-provider with its dev login and consent pages
 *   (any login name and password sign in; the account id is the login name);
 * - a rogue one, written here with jose, whose id_token can carry a wrong
 *   nonce, iss or aud, to show bearward refuses it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT } from 'jose'
import Provider from 'oidc-provider'
import { listen as listenOn } from './http.js'

export const OP_CLIENT_ID = 'bearward'
export const OP_CLIENT_SECRET = 'upstream-client-secret-0123456789abcdef'

type Handler = (req: IncomingMessage, res: ServerResponse) => void

/**
 * A server on 127.0.0.1:0 whose request handler is set later (the issuer
 * needs the port first). Requests that arrive before `handle` wait for it, as
 * a provider that is slow to start would make them: bearward starts its
 * discovery at once, and without a listener Node would leave that request
 * unanswered until bearward's 10 s timeout.
 */
async function listen(): Promise<{ server: Server; origin: string; sockets: Set<Socket>; handle(h: Handler): void; stop(): Promise<void> }> {
  const server = createServer()
  let handler: Handler | null = null
  const waiting: [IncomingMessage, ServerResponse][] = []
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (handler === null) waiting.push([req, res])
    else handler(req, res)
  })
  const sockets = new Set<Socket>()
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  const { url: origin } = await listenOn(server)
  return {
    server,
    origin,
    sockets,
    handle(h) {
      handler = h
      for (const [req, res] of waiting.splice(0)) h(req, res)
    },
    async stop() {
      if (!server.listening) return
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const s of sockets) s.destroy()
      await closed
    },
  }
}

/** The claims of an account of the test provider: `<login>@example.com` unless the login is an address already. */
export function accountClaims(login: string): Record<string, unknown> {
  const email = login.includes('@') ? login : `${login}@example.com`
  return { sub: login, name: `Person ${login}`, email, email_verified: true, groups: login.startsWith('admin') ? ['admins'] : ['staff'] }
}

export interface TestOp {
  issuer: string
  /** Stop answering (a provider that is down); connections are cut. */
  stop(): Promise<void>
}

/**
 * The test provider's address first, the provider itself later: a test that
 * must put the issuer in bearward's config before it knows bearward's
 * callback URL (`bin/bearward` picks its port) serves the provider after.
 */
export interface TestOpOptions {
  /**
   * Turn on the provider's Back-Channel Logout 1.0 feature, with this URI (bearward's
   * `/idp/<id>/backchannel-logout`) for its client, session required. node-oidc-provider refuses
   * to call special-use addresses (127.0.0.1 among them): its `fetch` is overridden here to drop
   * that check, as the test's bearward listens on loopback.
   */
  backchannelLogoutUri?: string
}

export async function openTestOp(): Promise<{ issuer: string; serve(redirectUris: string[], o?: TestOpOptions): void; stop(): Promise<void> }> {
  const l = await listen()
  return {
    issuer: l.origin,
    serve(redirectUris, o = {}) {
      const logout = o.backchannelLogoutUri
      const provider = new Provider(l.origin, {
        clients: [
          {
            client_id: OP_CLIENT_ID,
            client_secret: OP_CLIENT_SECRET,
            redirect_uris: redirectUris,
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
            ...(logout === undefined ? {} : { backchannel_logout_uri: logout, backchannel_logout_session_required: true }),
          },
        ],
        features: { devInteractions: { enabled: true }, ...(logout === undefined ? {} : { backchannelLogout: { enabled: true } }) },
        // Its SSRF guard is a dispatcher on the request; without it the call reaches bearward on loopback.
        ...(logout === undefined
          ? {}
          : {
              fetch: (url: string | URL, options: RequestInit & { dispatcher?: unknown }) => {
                const { dispatcher: _guard, ...rest } = options
                return globalThis.fetch(url, rest)
              },
            }),
        claims: { openid: ['sub'], profile: ['name'], email: ['email', 'email_verified'], groups: ['groups'] },
        scopes: ['openid', 'profile', 'email', 'groups'],
        async findAccount(_ctx: unknown, id: string) {
          return { accountId: id, claims: () => accountClaims(id) }
        },
        cookies: { keys: ['upstream-op-cookie-key-0123456789'] },
      })
      l.handle(provider.callback())
    },
    stop: l.stop,
  }
}

/** node-oidc-provider with devInteractions, one confidential client whose redirect URIs are `redirectUris`. */
export async function startTestOp(redirectUris: string[], o: TestOpOptions = {}): Promise<TestOp> {
  const op = await openTestOp()
  op.serve(redirectUris, o)
  return { issuer: op.issuer, stop: op.stop }
}

/**
 * What the rogue provider gets wrong: a claim (nonce, iss, aud), or the signature: `foreign-key`
 * signs with a key outside its JWKS under the published key's `kid`, `unknown-kid` with a key
 * whose `kid` the JWKS lacks, `unsigned` sends an `alg: none` token.
 */
export type RogueMode = 'good' | 'wrong-nonce' | 'wrong-iss' | 'wrong-aud' | 'foreign-key' | 'unknown-kid' | 'unsigned'

export interface RogueOp {
  issuer: string
  mode: RogueMode
  /** How many token requests it answered. */
  tokenRequests: number
  /** More claims for the id_tokens it signs (an `amr`, an `acr`); registered claims are set after them. */
  claims: Record<string, unknown>
  /**
   * Sign `payload` as this provider would sign any JWT (a logout token, say): ES256 with its
   * published key (`kid` rogue-1), or with `key: 'foreign'` a key outside its JWKS under that kid.
   */
  sign(payload: Record<string, unknown>, o?: { key?: 'own' | 'foreign'; typ?: string }): Promise<string>
  /** Its published public key, as a JWK. */
  publicJwk: Record<string, unknown>
  stop(): Promise<void>
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' })
  res.end(JSON.stringify(body))
}

async function formOf(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = []
  for await (const c of req) chunks.push(c as Buffer)
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'))
}

/**
 * A provider that signs every person in at once (authorization endpoint
 * redirects straight back with a code, `iss` included) and answers the code
 * with an id_token signed by its own published key, correct except for what
 * `mode` says: the nonce, the issuer, the audience or the signature.
 */
export async function startRogueOp(): Promise<RogueOp> {
  const l = await listen()
  const { privateKey, publicKey } = await generateKeyPair('ES256')
  // Not in the JWKS: what an attacker who knows the published kid signs with.
  const foreign = await generateKeyPair('ES256')
  const jwk = { ...(await exportJWK(publicKey)), kid: 'rogue-1', alg: 'ES256', use: 'sig' }
  const nonces = new Map<string, string>()
  const op: RogueOp = {
    issuer: l.origin,
    mode: 'good',
    tokenRequests: 0,
    claims: {},
    publicJwk: jwk,
    sign: (payload, o = {}) =>
      new SignJWT(payload)
        .setProtectedHeader({ alg: 'ES256', kid: 'rogue-1', ...(o.typ === undefined ? {} : { typ: o.typ }) })
        .sign(o.key === 'foreign' ? foreign.privateKey : privateKey),
    stop: l.stop,
  }
  l.handle((req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', l.origin)
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(res, 200, {
        issuer: l.origin,
        authorization_endpoint: `${l.origin}/authorize`,
        token_endpoint: `${l.origin}/token`,
        jwks_uri: `${l.origin}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['ES256'],
        code_challenge_methods_supported: ['S256'],
        authorization_response_iss_parameter_supported: true,
      })
    }
    if (url.pathname === '/jwks') return json(res, 200, { keys: [jwk] })
    if (url.pathname === '/authorize') {
      const code = `code-${nonces.size + 1}`
      nonces.set(code, url.searchParams.get('nonce') ?? '')
      const back = new URL(url.searchParams.get('redirect_uri') ?? '')
      back.searchParams.set('code', code)
      back.searchParams.set('state', url.searchParams.get('state') ?? '')
      back.searchParams.set('iss', l.origin)
      res.writeHead(303, { location: back.toString() })
      return res.end()
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      void formOf(req).then(async (form) => {
        op.tokenRequests += 1
        const nonce = nonces.get(form.get('code') ?? '') ?? ''
        const now = Math.floor(Date.now() / 1000)
        const unsigned = new UnsecuredJWT({ nonce, email: 'rogue@example.com', name: 'Rogue Person' })
          .setIssuer(l.origin)
          .setAudience(OP_CLIENT_ID)
          .setSubject('rogue-1')
          .setIssuedAt(now)
          .setExpirationTime(now + 300)
          .encode()
        const idToken =
          op.mode === 'unsigned'
            ? unsigned
            : await new SignJWT({
                ...op.claims,
                nonce: op.mode === 'wrong-nonce' ? `${nonce}-other` : nonce,
                email: 'rogue@example.com',
                name: 'Rogue Person',
              })
                .setProtectedHeader({ alg: 'ES256', kid: op.mode === 'unknown-kid' ? 'rogue-2' : 'rogue-1' })
                .setIssuer(op.mode === 'wrong-iss' ? 'https://someone-else.example.com' : l.origin)
                .setAudience(op.mode === 'wrong-aud' ? 'another-client' : OP_CLIENT_ID)
                .setSubject('rogue-1')
                .setIssuedAt(now)
                .setExpirationTime(now + 300)
                .sign(op.mode === 'foreign-key' || op.mode === 'unknown-kid' ? foreign.privateKey : privateKey)
        json(res, 200, { access_token: 'rogue-access-token', token_type: 'Bearer', expires_in: 300, id_token: idToken })
      })
      return
    }
    json(res, 404, { error: 'not_found' })
  })
  return op
}
