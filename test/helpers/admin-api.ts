/**
 * The admin API under test: a demo config with `admin_api` on (an admin
 * client `ops`, a read-only-minded client `auditor`, alice as an admin
 * person), tokens for it, and a checker that validates every answer against
 * the OpenAPI document the server itself serves.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import { asConfig, DEMO_PASSWORD, DEMO_SECRET, type DemoConfig, demoHashes } from './as-config.js'
import { authorizeAs, Browser, pkce } from './as-front.js'
import type { ConfigTree } from './config-tree.js'
import { type Reply, reply } from './http.js'

export const ADMIN_AUDIENCE_PATH = '/admin/v1'
export const CONSOLE_CALLBACK = 'http://127.0.0.1:5556/callback'
export const WEB_CALLBACK = 'http://127.0.0.1:5555/callback'

export function basic(id: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`
}

/** The demo config plus two admin clients (`ops`, `auditor`) listed in `admin_api.clients`. */
export async function adminConfig(o: { port: number; upstream: string; store?: string | ConfigTree; admin?: ConfigTree }): Promise<DemoConfig> {
  const { secretHash } = await demoHashes()
  const config = await asConfig({ port: o.port, upstream: o.upstream, ...(o.store === undefined ? {} : { store: o.store }) })
  config.authorization_server.clients.push(
    { client_id: 'ops', type: 'confidential', secret_hash: secretHash, grant_types: ['client_credentials'], scopes: [] },
    { client_id: 'auditor', type: 'confidential', secret_hash: secretHash, grant_types: ['client_credentials'], scopes: [] },
  )
  // `console`: the code flow for admin people; bob is a person who is not one.
  config.authorization_server.clients.push({
    client_id: 'console',
    type: 'confidential',
    secret_hash: secretHash,
    redirect_uris: [CONSOLE_CALLBACK],
    grant_types: ['authorization_code', 'refresh_token'],
    scopes: ['openid'],
  })
  config.authorization_server.users.push({ username: 'bob', password_hash: (await demoHashes()).passwordHash, claims: { name: 'Bob' } })
  config.admin_api = { enabled: true, clients: ['ops', 'auditor', 'console'], people: ['alice'], ...o.admin }
  return config
}

/** A client-credentials token of `client` (secret DEMO_SECRET) for the admin API. */
export async function adminToken(base: string, client: string, scope: string, resource = `${base}${ADMIN_AUDIENCE_PATH}`): Promise<Reply> {
  return reply(
    fetch(`${base}/token`, {
      method: 'POST',
      headers: { authorization: basic(client, DEMO_SECRET), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource }).toString(),
    }),
  )
}

/** The access token of a token answer that must have succeeded. */
export function accessTokenOf(r: Reply): string {
  const token = r.json?.access_token
  if (r.status !== 200 || typeof token !== 'string') throw new Error(`no token: ${r.status} ${r.text}`)
  return token
}

type Json = Record<string, unknown>

/** Validates answers against the served OpenAPI document: status documented, content type, body schema. */
export class OpenApiChecker {
  readonly #doc: Json
  readonly #ajv = new Ajv2020({ strict: false, allErrors: true })
  readonly #compiled = new Map<string, ValidateFunction>()
  /** How many answers were checked (a test can assert it checked them all). */
  checked = 0

  constructor(doc: Json) {
    this.#doc = doc
    // Register the document itself so `#/components/schemas/X` refs resolve against it.
    this.#ajv.addSchema({ ...doc, $id: 'admin-openapi' }, 'admin-openapi')
  }

  /** Throws with the reason when `r` (an answer to `method path`) does not match the document. */
  check(method: string, path: string, r: Reply): void {
    const op = this.#operation(method, path)
    const responses = op.responses as Record<string, Json>
    const documented = responses[String(r.status)] ?? responses.default
    if (documented === undefined) throw new Error(`${method} ${path}: status ${r.status} is not documented`)
    const content = documented.content as Record<string, { schema: { $ref: string } }> | undefined
    const type = (r.headers.get('content-type') ?? '').split(';')[0] as string
    if (content === undefined) {
      if (r.text !== '') throw new Error(`${method} ${path}: ${r.status} is documented without a body, got ${r.text}`)
    } else {
      const media = content[type]
      if (media === undefined) throw new Error(`${method} ${path}: ${r.status} as ${type} is not documented (${Object.keys(content).join(', ')})`)
      const validate = this.#validator(media.schema.$ref)
      if (!validate(r.json))
        throw new Error(`${method} ${path}: ${r.status} body does not match ${media.schema.$ref}: ${JSON.stringify(validate.errors)} in ${r.text}`)
    }
    this.checked++
  }

  #operation(method: string, path: string): Json {
    const paths = this.#doc.paths as Record<string, Json>
    const bare = path.split('?')[0] as string
    for (const [template, item] of Object.entries(paths)) {
      const re = new RegExp(`^${template.replace(/\{[a-z_]+\}/g, '[^/]+')}$`)
      if (re.test(bare) && item[method.toLowerCase()] !== undefined) return item[method.toLowerCase()] as Json
    }
    // A path or method the API does not serve: its 404/405 answers are problems, checked against Problem.
    return { responses: { default: { content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } } } }
  }

  #validator(ref: string): ValidateFunction {
    let v = this.#compiled.get(ref)
    if (v === undefined) {
      const name = ref.replace('#/components/schemas/', '')
      v = this.#ajv.compile({ $ref: `admin-openapi#/components/schemas/${name}` })
      this.#compiled.set(ref, v)
    }
    return v
  }
}

/** An admin API caller whose every answer is validated against the document. */
export class AdminClient {
  constructor(
    readonly base: string,
    readonly checker: OpenApiChecker,
    /** Where `/admin/v1` is mounted (admin_listen: '', public_path: its value minus `/v1`). */
    readonly prefix = '/admin/v1',
  ) {}

  async call(method: string, path: string, o: { token?: string | null; body?: unknown; headers?: Record<string, string> } = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...o.headers }
    if (o.token) headers.authorization = `Bearer ${o.token}`
    if (o.body !== undefined) headers['content-type'] ??= 'application/json'
    const r = await reply(fetch(`${this.base}${this.prefix}${path}`, { method, headers, ...(o.body === undefined ? {} : { body: JSON.stringify(o.body) }) }))
    this.checker.check(method, path, r)
    return r
  }
}

/** Fetch the served document and build a checker from it. */
export async function openApiChecker(adminBase: string): Promise<OpenApiChecker> {
  const r = await reply(fetch(`${adminBase}/admin/v1/openapi.json`))
  if (r.status !== 200 || r.json === null) throw new Error(`openapi.json: ${r.status} ${r.text}`)
  return new OpenApiChecker(r.json)
}

/** The `items` of a list answer (throws when the answer is not a list). */
export function itemsOf(r: Reply): Array<Record<string, unknown>> {
  const items = r.json?.items
  if (!Array.isArray(items)) throw new Error(`not a list answer: ${r.status} ${r.text}`)
  return items as Array<Record<string, unknown>>
}

/** The `id`s of a list answer. */
export function idsOf(r: Reply): unknown[] {
  return itemsOf(r).map((item) => item.id)
}

/**
 * A person's token answer through the code flow (sign in, consent, code at
 * /token): `client` is `web` (orders) or `console` (admin).
 */
export async function personToken(base: string, o: { client: 'web' | 'console'; username: string; scope: string; resource?: string }): Promise<Reply> {
  const { verifier, challenge } = pkce()
  const redirect = o.client === 'web' ? WEB_CALLBACK : CONSOLE_CALLBACK
  const params = new URLSearchParams({
    response_type: 'code',
    client_id: o.client,
    redirect_uri: redirect,
    scope: o.scope,
    state: 's1',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...(o.resource === undefined ? {} : { resource: o.resource }),
  })
  const back = await authorizeAs(new Browser(), `${base}/authorize?${params}`, { username: o.username, password: DEMO_PASSWORD })
  const code = back.searchParams.get('code')
  if (code === null) return { status: 0, headers: new Headers(), text: back.toString(), json: Object.fromEntries(back.searchParams) }
  return reply(
    fetch(`${base}/token`, {
      method: 'POST',
      headers: { authorization: basic(o.client, DEMO_SECRET), 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirect, code_verifier: verifier }).toString(),
    }),
  )
}

/** The `jti` of a JWT access token (read, not verified: the server verifies). */
export function jtiOf(token: string): string {
  const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { jti?: unknown }
  if (typeof payload.jti !== 'string') throw new Error('no jti')
  return payload.jti
}
