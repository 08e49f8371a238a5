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
import { parseArgs } from 'node:util'

export const ADMIN_CLI_HELP = `Usage: bearward admin <resource> <action> [options]

  clients list                          every client (YAML ones with source config)
  clients get ID
  grants list --person SUB [--client ID] a person's live grants
  grants revoke GRANT_ID                tokens refused, refresh family ended, streams ended
  tokens revoke JTI                     one access token, by its jti

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

async function call(s: Settings, bearer: string, method: string, path: string, body?: Json): Promise<Json | null> {
  const res = await fetch(`${s.url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  const json = text === '' ? null : (JSON.parse(text) as Json)
  if (res.status >= 400) throw new ApiError(`${method} ${path}: ${res.status} ${String(json?.detail ?? text)}`)
  return json
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
const GRANT_COLUMNS = ['id', 'client_id', 'scope', 'created_at', 'expires_at']

/** Run `bearward admin ARGS`; resolves to the exit code. */
export async function adminCli(args: string[], env: NodeJS.ProcessEnv, out: (text: string) => void, err: (text: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { help: { type: 'boolean', short: 'h' }, output: { type: 'string', default: 'table' }, person: { type: 'string' }, client: { type: 'string' } },
  })
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
  const show = (rows: Json[] | Json, columns: readonly string[]): void => {
    out(output === 'json' ? `${JSON.stringify(rows, null, 2)}\n` : table(Array.isArray(rows) ? rows : [rows], columns))
  }
  try {
    const key = `${resource} ${action}`
    if (key === 'clients list') show(await all(s, bearer, '/clients'), CLIENT_COLUMNS)
    else if (key === 'clients get' && id !== undefined) show((await call(s, bearer, 'GET', `/clients/${encodeURIComponent(id)}`)) ?? {}, CLIENT_COLUMNS)
    else if (key === 'grants list' && values.person !== undefined) {
      const q = new URLSearchParams({ person: values.person, ...(values.client === undefined ? {} : { client: values.client }) })
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
