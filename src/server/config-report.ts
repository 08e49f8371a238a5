import { demoSecretOf } from '../config/demo.js'
import { BACK_CHANNEL_PATHS } from '../config/own-paths.js'
import { BUILT_IN_SCOPES } from '../config/sections/authorization-server.js'
import type { ClientConfig, Config, RouteConfig } from '../config/validated-config.js'
import type { ConfigProblem } from '../errors.js'

/**
 * What the process says about its config, for the operator reading its log
 * (issue #42, "Logs an operator can act on"): at start, the routes it serves,
 * where its discovery document is and, on a config that still holds the demo
 * secrets, the one command that gets a token; at a reload, what changed.
 * Pure: the App logs what these return.
 */

export interface ReportLine {
  readonly fields: Readonly<Record<string, unknown>>
  readonly msg: string
}

/** A route as the start-up line names it. */
function routeSummary(r: RouteConfig): { name: string; path: string; host?: string; upstream: string; public?: true } {
  return {
    name: r.name,
    path: r.match.path,
    ...(r.match.host === null ? {} : { host: r.match.host }),
    upstream: r.upstream,
    ...(r.public ? { public: true as const } : {}),
  }
}

/**
 * The lines logged once the process listens. `listenUrl` is where it
 * actually listens (port 0 resolved): the demo's curl goes there, at the
 * issuer's path, since public_url may name a host the machine does not.
 */
export function startupReport(config: Config, listenUrl: string): ReportLine[] {
  const lines: ReportLine[] = []
  const routes = config.routes.map(routeSummary)
  lines.push({
    fields: { routes },
    msg:
      routes.length === 0
        ? 'routes: none'
        : `routes: ${routes.map((r) => `${r.name} ${r.host ?? ''}${r.path} -> ${r.upstream}${r.public ? ' (public)' : ''}`).join(', ')}`,
  })
  const as = config.authorizationServer
  if (as === null) return lines
  const discovery = `${config.publicUrl}${BACK_CHANNEL_PATHS.openidConfiguration}`
  lines.push({ fields: { discovery }, msg: `discovery: ${discovery}` })
  const demo = demoTokenCommand(as.clients, config, listenUrl)
  if (demo !== null) lines.push({ fields: { demo_client: demo.clientId }, msg: `demo: get a token with ${demo.command}` })
  return lines
}

/**
 * The curl that gets a client-credentials token for a client that still uses
 * a public demo secret (config/gateway.yaml's `demo-service`), or null: a
 * config with real secrets has no command to print, since its secrets are
 * not known here.
 */
function demoTokenCommand(clients: readonly ClientConfig[], config: Config, listenUrl: string): { clientId: string; command: string } | null {
  const client = clients.find(
    (c) =>
      c.type === 'confidential' &&
      c.grantTypes.includes('client_credentials') &&
      c.tokenEndpointAuthMethod === 'client_secret_basic' &&
      c.secretHash !== null &&
      demoSecretOf(c.secretHash) !== undefined,
  )
  if (client === undefined || client.secretHash === null) return null
  const secret = demoSecretOf(client.secretHash)
  // The scopes routes ask for, not the OpenID ones a client-credentials token has no use for.
  const scopes = client.scopes.filter((s) => !(s in BUILT_IN_SCOPES))
  const issuerPath = new URL(config.publicUrl).pathname.replace(/\/$/, '')
  const scopeArg = scopes.length === 0 ? '' : ` -d scope=${shellWord(scopes.join(' '))}`
  return {
    clientId: client.clientId,
    command: `curl -s -u ${shellWord(`${client.clientId}:${secret}`)} -d grant_type=client_credentials${scopeArg} ${listenUrl}${issuerPath}${BACK_CHANNEL_PATHS.token}`,
  }
}

/** `value` as one shell word: bare when it holds nothing the shell reads, else single-quoted. */
function shellWord(value: string): string {
  return /^[A-Za-z0-9_:./@%+=,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`
}

/** What a reload changed, by name: added, removed, and changed in any setting. */
export interface NamedChanges {
  readonly added: string[]
  readonly removed: string[]
  readonly changed: string[]
}

export interface ConfigChanges {
  readonly routes: NamedChanges
  readonly clients: NamedChanges
}

/** Compare two lists of named settings (routes by name, clients by client_id). */
function compareNamed<T>(before: readonly T[], after: readonly T[], nameOf: (item: T) => string): NamedChanges {
  const old = new Map(before.map((item) => [nameOf(item), canonical(item)]))
  const now = new Map(after.map((item) => [nameOf(item), canonical(item)]))
  return {
    added: [...now.keys()].filter((name) => !old.has(name)),
    removed: [...old.keys()].filter((name) => !now.has(name)),
    changed: [...now].filter(([name, text]) => old.has(name) && old.get(name) !== text).map(([name]) => name),
  }
}

/** A setting's value as text that two equal settings share (keys sorted; Maps, Sets and RegExps spelled out). */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof Map) return { $map: [...v.entries()] }
    if (v instanceof Set) return { $set: [...v] }
    if (v instanceof RegExp) return { $re: String(v) }
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    }
    return v
  })
}

/** What a reload from `old` to `next` changed in the routes and the YAML clients. */
export function configChanges(old: Config, next: Config): ConfigChanges {
  return {
    routes: compareNamed(old.routes, next.routes, (r) => r.name),
    clients: compareNamed(old.authorizationServer?.clients ?? [], next.authorizationServer?.clients ?? [], (c) => c.clientId),
  }
}

/**
 * The line a reload logs just before its `config reloaded` (whose message and
 * `routes` count stay as they were: alerts and scripts read them): `changes`
 * holds only the non-empty lists; the message says them in words.
 */
export function reloadReport(changes: ConfigChanges): ReportLine {
  const fields: Record<string, Record<string, string[]>> = {}
  const words: string[] = []
  for (const kind of ['routes', 'clients'] as const) {
    const c = changes[kind]
    const some: Record<string, string[]> = {}
    for (const what of ['added', 'removed', 'changed'] as const) {
      if (c[what].length === 0) continue
      some[what] = c[what]
      words.push(`${kind} ${what}: ${c[what].join(', ')}`)
    }
    if (Object.keys(some).length > 0) fields[kind] = some
  }
  return { fields: { changes: fields }, msg: words.length === 0 ? 'config changes: none to routes or clients' : `config changes: ${words.join('; ')}` }
}

/**
 * The warnings a load logs: only those the previous load did not already
 * give, so a reload repeats none of them (the ephemeral key, a demo secret)
 * and says each new one once. A warning is the same when its key path and
 * message are (an edit elsewhere in the file moves its line); one that went
 * away and comes back is new again.
 */
export class WarningMemory {
  #previous = new Set<string>()

  /** This load's `warnings` less those the previous load gave; remembers this load's. */
  fresh(warnings: readonly ConfigProblem[]): ConfigProblem[] {
    const keys = warnings.map((w) => `${w.path}\n${w.message}`)
    const out = warnings.filter((_w, i) => !this.#previous.has(keys[i] ?? ''))
    this.#previous = new Set(keys)
    return out
  }
}
