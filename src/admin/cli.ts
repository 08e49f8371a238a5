/**
 * `bearward admin`: the admin API from a shell, over the same HTTP API
 * (docs/admin.md, "CLI"). It takes a token with client credentials (a
 * secret) from the environment, never from arguments (which `ps` shows):
 *   BEARWARD_ADMIN_URL            where the API is served (admin_listen, or public_url + public_path minus /v1)
 *   BEARWARD_ADMIN_ISSUER         public_url: the token endpoint and the audience come from it
 *   BEARWARD_ADMIN_CLIENT_ID      a client listed in admin_api.clients
 *   BEARWARD_ADMIN_CLIENT_SECRET  its secret
 *   BEARWARD_ADMIN_SCOPE          optional: bearward:admin (default) or bearward:admin:read
 */
import { type ParseArgsConfig, parseArgs } from 'node:util'

export const ADMIN_CLI_HELP = `Usage: bearward admin <resource> <action> [options]

  clients list [--source S]             every client (S: config, registration, admin)
  clients get ID
  clients create [ID] [client options]  an admin-managed client; its secret is printed once
  clients update ID [client options]    changes the named members (read, then written with If-Match)
  clients disable ID | enable ID        a disabled client gets no token; its grants are revoked
  clients delete ID                     its grants are revoked
  clients rotate-secret ID [--previous-expires-in SECONDS]
                                        a new secret, printed once; the old one works 24 h (or SECONDS)
  people list | get ID
  people create USERNAME [--sub SUB] [--claims JSON]
  people disable ID | enable ID | delete ID
  people password-link ID               a single-use link where the person sets a password
  people factors ID [--remove all|FACTOR_ID]
  people sign-out ID                    ends every session of the person
  grants list --person SUB [--client ID] a person's live grants
  grants list --client ID               every live grant of a client
  grants revoke GRANT_ID                tokens refused, refresh family ended, streams ended
  tokens revoke JTI                     one access token, by its jti

Client options: --name NAME, --grant-type G (repeat), --redirect-uri URI (repeat),
  --scope "A B", --auth-method client_secret_basic|client_secret_post|none|private_key_jwt,
  --metadata JSON (any RFC 7591 member; the options above win)

Options:
  --output json|table   (default table)

Environment (required unless said): BEARWARD_ADMIN_URL (e.g. http://127.0.0.1:9090),
BEARWARD_ADMIN_ISSUER (public_url), BEARWARD_ADMIN_CLIENT_ID, BEARWARD_ADMIN_CLIENT_SECRET,
BEARWARD_ADMIN_SCOPE (optional: bearward:admin or bearward:admin:read).
Exit 0 on success; 1 with the API's problem on stderr otherwise.
`

type Json = Record<string, unknown>

interface Settings {
  url: string
  issuer: string
  clientId: string
  secret: string
  scope: string
}

function settings(env: NodeJS.ProcessEnv): Settings {
  const need = (name: string): string => {
    const v = env[name]
    if (v === undefined || v === '') throw new Error(`set ${name} (see bearward admin --help)`)
    return v
  }
  return {
    url: need('BEARWARD_ADMIN_URL').replace(/\/+$/, ''),
    issuer: need('BEARWARD_ADMIN_ISSUER').replace(/\/+$/, ''),
    clientId: need('BEARWARD_ADMIN_CLIENT_ID'),
    secret: need('BEARWARD_ADMIN_CLIENT_SECRET'),
    scope: env.BEARWARD_ADMIN_SCOPE ?? 'bearward:admin',
  }
}

async function token(s: Settings): Promise<string> {
  const basic = Buffer.from(`${encodeURIComponent(s.clientId)}:${encodeURIComponent(s.secret)}`).toString('base64')
  const res = await fetch(`${s.issuer}/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope: s.scope, resource: `${s.issuer}/admin/v1` }).toString(),
  })
  const body = (await res.json().catch(() => ({}))) as Json
  if (res.status !== 200 || typeof body.access_token !== 'string') {
    throw new Error(`no admin token from ${s.issuer}/token: ${res.status} ${String(body.error ?? '')} ${String(body.error_description ?? '')}`.trim())
  }
  return body.access_token
}

class ApiError extends Error {}

async function request(s: Settings, bearer: string, method: string, path: string, body?: Json, headers: Record<string, string> = {}) {
  const res = await fetch(`${s.url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  const json = text === '' ? null : (JSON.parse(text) as Json)
  if (res.status >= 400) throw new ApiError(`${method} ${path}: ${res.status} ${String(json?.detail ?? text)}`)
  return { json, etag: res.headers.get('etag') }
}

async function call(s: Settings, bearer: string, method: string, path: string, body?: Json): Promise<Json | null> {
  return (await request(s, bearer, method, path, body)).json
}

/** Every page of a list. */
async function all(s: Settings, bearer: string, path: string): Promise<Json[]> {
  const items: Json[] = []
  let cursor: string | null = null
  do {
    const sep = path.includes('?') ? '&' : '?'
    const page: Json | null = await call(s, bearer, 'GET', cursor === null ? path : `${path}${sep}cursor=${encodeURIComponent(cursor)}`)
    items.push(...((page?.items as Json[] | undefined) ?? []))
    cursor = typeof page?.next_cursor === 'string' ? page.next_cursor : null
  } while (cursor !== null)
  return items
}

/** A table of `rows` with `columns`, aligned; lists become comma-separated. */
export function table(rows: readonly Json[], columns: readonly string[]): string {
  const cell = (v: unknown): string => (Array.isArray(v) ? v.join(',') : v === null || v === undefined ? '-' : String(v))
  const grid = [columns.map((c) => c.toUpperCase()), ...rows.map((r) => columns.map((c) => cell(r[c])))]
  const widths = columns.map((_, i) => Math.max(...grid.map((line) => (line[i] ?? '').length)))
  return `${grid.map((line) => line.map((v, i) => (i === line.length - 1 ? v : v.padEnd(widths[i] ?? 0))).join('  ')).join('\n')}\n`
}

const CLIENT_COLUMNS = ['id', 'source', 'type', 'grant_types', 'disabled']
const SECRET_COLUMNS = ['client_id', 'client_secret', 'previous_expires_at']
const CREATED_COLUMNS = ['id', 'source', 'type', 'grant_types', 'client_secret']
const GRANT_COLUMNS = ['id', 'person', 'client_id', 'scope', 'created_at', 'expires_at']
const PERSON_COLUMNS = ['id', 'source', 'sub', 'has_password', 'disabled']
const FACTOR_COLUMNS = ['id', 'kind', 'name', 'created_at']

type Values = Record<string, string | boolean | string[] | undefined>

function jsonOption(value: unknown, name: string): Json {
  if (value === undefined) return {}
  let parsed: unknown
  try {
    parsed = JSON.parse(String(value))
  } catch {
    throw new Error(`${name} is not valid JSON`)
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error(`${name} must be a JSON object`)
  return parsed as Json
}

/** RFC 7591 metadata from the client options. */
function clientMetadata(values: Values): Json {
  const metadata = jsonOption(values.metadata, '--metadata')
  if (typeof values.name === 'string') metadata.client_name = values.name
  if (typeof values.scope === 'string') metadata.scope = values.scope
  if (typeof values['auth-method'] === 'string') metadata.token_endpoint_auth_method = values['auth-method']
  if (Array.isArray(values['grant-type'])) metadata.grant_types = values['grant-type']
  if (Array.isArray(values['redirect-uri'])) metadata.redirect_uris = values['redirect-uri']
  return metadata
}

const path = (...parts: string[]): string => parts.map((p) => (p.startsWith('/') ? p : encodeURIComponent(p))).join('/')

/** The options of `bearward admin`. */
const ADMIN_OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  output: { type: 'string', default: 'table' },
  person: { type: 'string' },
  client: { type: 'string' },
  source: { type: 'string' },
  name: { type: 'string' },
  scope: { type: 'string' },
  'auth-method': { type: 'string' },
  'grant-type': { type: 'string', multiple: true },
  'redirect-uri': { type: 'string', multiple: true },
  metadata: { type: 'string' },
  'previous-expires-in': { type: 'string' },
  sub: { type: 'string' },
  claims: { type: 'string' },
  remove: { type: 'string' },
} as const satisfies ParseArgsConfig['options']

/**
 * `args` with every option first and every positional after `--`: a grant id or a jti is random
 * base64url and may begin with `-` (`-lq3…`), which parseArgs would read as an unknown option.
 * Only the declared options are options; a string option's value is joined to it (`--person=-x`).
 */
export function idsAsPositionals(args: readonly string[], options: NonNullable<ParseArgsConfig['options']>): string[] {
  const opts: string[] = []
  const positionals: string[] = []
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string
    if (arg === '--') {
      positionals.push(...args.slice(i + 1))
      break
    }
    // An unknown `--name` stays an option, so a typo is refused by name; an id that itself begins
    // with `--` (one in 4,096) is written after `--`, as for any command.
    const name = arg.startsWith('--')
      ? arg.slice(2).split('=')[0]
      : Object.entries(options).find(([, o]) => o.short !== undefined && arg === `-${o.short}`)?.[0]
    const option = name === undefined ? undefined : options[name]
    if (option === undefined && !arg.startsWith('--')) {
      positionals.push(arg)
      continue
    }
    if (name === undefined || option === undefined) {
      opts.push(arg)
      continue
    }
    if (option.type === 'string' && !arg.includes('=') && i + 1 < args.length) opts.push(`--${name}=${args[++i] as string}`)
    else opts.push(arg.startsWith('--') ? arg : `--${name}`)
  }
  return [...opts, '--', ...positionals]
}

/** Run `bearward admin ARGS`; resolves to the exit code. */
export async function adminCli(args: string[], env: NodeJS.ProcessEnv, out: (text: string) => void, err: (text: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({ args: idsAsPositionals(args, ADMIN_OPTIONS), allowPositionals: true, options: ADMIN_OPTIONS })
  if (values.help || positionals.length === 0) {
    out(ADMIN_CLI_HELP)
    return values.help ? 0 : 1
  }
  const output = values.output
  if (output !== 'json' && output !== 'table') throw new Error('--output is json or table')
  const [resource, action, id, ...extra] = positionals
  if (extra.length > 0) throw new Error(`unexpected ${extra.join(' ')}`)
  const s = settings(env)
  const bearer = await token(s)
  const show = (rows: Json[] | Json | null, columns: readonly string[]): void => {
    const value = rows ?? {}
    out(output === 'json' ? `${JSON.stringify(value, null, 2)}\n` : table(Array.isArray(value) ? value : [value], columns))
  }
  const done = (text: string): void => out(output === 'json' ? `${JSON.stringify({ done: text })}\n` : `${text}\n`)
  try {
    const key = `${resource} ${action}`
    if (key === 'clients list')
      show(await all(s, bearer, values.source === undefined ? '/clients' : `/clients?source=${encodeURIComponent(values.source)}`), CLIENT_COLUMNS)
    else if (key === 'clients get' && id !== undefined) show(await call(s, bearer, 'GET', path('/clients', id)), CLIENT_COLUMNS)
    else if (key === 'clients create')
      show(await call(s, bearer, 'POST', '/clients', { ...clientMetadata(values), ...(id === undefined ? {} : { client_id: id }) }), CREATED_COLUMNS)
    else if (key === 'clients update' && id !== undefined) {
      // Read, then write against what was read: a change made in between is a 412, never overwritten.
      const { etag } = await request(s, bearer, 'GET', path('/clients', id))
      show((await request(s, bearer, 'PATCH', path('/clients', id), clientMetadata(values), etag === null ? {} : { 'if-match': etag })).json, CLIENT_COLUMNS)
    } else if ((key === 'clients disable' || key === 'clients enable') && id !== undefined)
      show(await call(s, bearer, 'POST', path('/clients', id, action as string)), CLIENT_COLUMNS)
    else if (key === 'clients delete' && id !== undefined) {
      await call(s, bearer, 'DELETE', path('/clients', id))
      done(`deleted client ${id}`)
    } else if (key === 'clients rotate-secret' && id !== undefined) {
      const inSec = values['previous-expires-in']
      if (inSec !== undefined && !/^[0-9]{1,6}$/.test(inSec)) throw new Error('--previous-expires-in is a number of seconds')
      const body = inSec === undefined ? {} : { previous_expires_at: Math.floor(Date.now() / 1000) + Number(inSec) }
      show(await call(s, bearer, 'POST', path('/clients', id, 'secrets'), body), SECRET_COLUMNS)
    } else if (key === 'people list') show(await all(s, bearer, '/people'), PERSON_COLUMNS)
    else if (key === 'people get' && id !== undefined) show(await call(s, bearer, 'GET', path('/people', id)), PERSON_COLUMNS)
    else if (key === 'people create' && id !== undefined) {
      const body: Json = { username: id, ...(values.sub === undefined ? {} : { sub: values.sub }) }
      if (values.claims !== undefined) body.claims = jsonOption(values.claims, '--claims')
      show(await call(s, bearer, 'POST', '/people', body), PERSON_COLUMNS)
    } else if ((key === 'people disable' || key === 'people enable') && id !== undefined)
      show(await call(s, bearer, 'POST', path('/people', id, action as string)), PERSON_COLUMNS)
    else if (key === 'people delete' && id !== undefined) {
      await call(s, bearer, 'DELETE', path('/people', id))
      done(`deleted person ${id}`)
    } else if (key === 'people password-link' && id !== undefined)
      show(await call(s, bearer, 'POST', path('/people', id, 'password-link')), ['url', 'expires_at'])
    else if (key === 'people factors' && id !== undefined) {
      if (values.remove === undefined) show(((await call(s, bearer, 'GET', path('/people', id, 'factors')))?.items as Json[] | undefined) ?? [], FACTOR_COLUMNS)
      else {
        await call(s, bearer, 'DELETE', values.remove === 'all' ? path('/people', id, 'factors') : path('/people', id, 'factors', values.remove))
        done(`removed ${values.remove === 'all' ? 'every factor' : `factor ${values.remove}`} of ${id}`)
      }
    } else if (key === 'people sign-out' && id !== undefined) show(await call(s, bearer, 'DELETE', path('/people', id, 'sessions')), ['sessions_ended'])
    else if (key === 'grants list' && (values.person !== undefined || values.client !== undefined)) {
      const q = new URLSearchParams({
        ...(values.person === undefined ? {} : { person: values.person }),
        ...(values.client === undefined ? {} : { client: values.client }),
      })
      show(await all(s, bearer, `/grants?${q}`), GRANT_COLUMNS)
    } else if (key === 'grants revoke' && id !== undefined) {
      await call(s, bearer, 'DELETE', `/grants/${encodeURIComponent(id)}`)
      out(`revoked grant ${id}\n`)
    } else if (key === 'tokens revoke' && id !== undefined) {
      await call(s, bearer, 'POST', '/tokens/revoke', { jti: id })
      out(`revoked token ${id}\n`)
    } else {
      err(`bearward admin: unknown or incomplete command: ${positionals.join(' ')}\n\n${ADMIN_CLI_HELP}`)
      return 1
    }
  } catch (e) {
    if (e instanceof ApiError) {
      err(`bearward admin: ${e.message}\n`)
      return 1
    }
    throw e
  }
  return 0
}
