import { isMap, type Node } from 'yaml'
import type { AuthenticationRequirement, McpRouteConfig } from '../validated-config.js'
import { childPath } from '../key-path.js'
import type { MapView, Reader } from '../reader.js'
import { checkOrigin } from '../values.js'
import { keysAt } from '../contract.js'
import { acceptedByAll, readRequirement } from './route-authentication.js'
import { scopeName } from './route-scopes.js'
import { readMcpApprovals } from './approvals.js'

export const MCP_KEYS = keysAt('#/$defs/route/properties/mcp')
/** An MCP rule written as a mapping: `{ scopes, authentication }`. */
export const MCP_RULE_KEYS = keysAt('#/$defs/mcpRule')
/** A tool's rule written as a mapping: the keys of any rule, and `rate_limit` (read by route-rate-limits.ts). */
export const MCP_TOOL_RULE_KEYS = keysAt('#/$defs/mcpToolRule')
/** How much of a JSON-RPC body an MCP route reads to judge it (`mcp.max_body`). */
const DEFAULT_MCP_MAX_BODY = 1024 * 1024
/** An MCP protocol revision: a date (MCP versioning). */
const PROTOCOL_REVISION = /^\d{4}-\d{2}-\d{2}$/

/**
 * `mcp`: the route fronts an MCP server (Streamable HTTP). `tools`,
 * `resources` and `prompts` name (or match, `*` globs) the extra scopes a
 * call, read or get of each needs; lists are filtered by the same rules
 * (`filter_lists`). `protocol_versions` limits the revisions accepted;
 * `allowed_origins` the browser origins (default: public_url's). The gateway
 * reads the JSON body itself, so a form token in the body (`token_in_body`)
 * cannot be combined.
 */
export function readMcp(r: Reader, m: MapView, isPublic: boolean, tokenInBody: boolean, publicUrl: string): McpRouteConfig | null {
  const node = m.get('mcp')
  if (node === undefined) return null
  const where = m.pathOf('mcp')
  const mcp = r.map(node, where, MCP_KEYS)
  if (mcp === undefined) return null
  if (isPublic) {
    r.problem(node, where, 'a public route takes no token, so it cannot require scopes per tool; remove `mcp` or `public: true`')
    return null
  }
  if (tokenInBody) {
    r.problem(node, where, 'an MCP route reads its JSON-RPC body itself, so it cannot also take `token_in_body`; remove one of them')
    return null
  }
  const scopeToken = scopeName(r)
  const stepUps: McpRouteConfig['authentication'] = { tools: {}, resources: {}, prompts: {} }
  const approvalTools: string[] = []
  const rules = (key: 'tools' | 'resources' | 'prompts', what: string): Record<string, string[]> => {
    const out: Record<string, string[]> = {}
    const rulesNode = mcp.get(key)
    for (const e of rulesNode === undefined ? [] : (r.entries(rulesNode, mcp.pathOf(key)) ?? [])) {
      if (e.key === '') {
        r.problem(e.keyNode, e.path, `an empty ${what} name matches nothing; write a name or a pattern with \`*\``)
        continue
      }
      const rule = readMcpRule(r, e.value, e.path, what, scopeToken, key === 'tools' ? MCP_TOOL_RULE_KEYS : MCP_RULE_KEYS)
      if (rule === undefined) continue
      if (rule.scopes.length > 0) out[e.key] = rule.scopes
      if (rule.authentication !== null) stepUps[key][e.key] = rule.authentication
      if (rule.approval) approvalTools.push(e.key)
    }
    return out
  }
  const tools = rules('tools', 'tool')
  const resources = rules('resources', 'resource')
  const prompts = rules('prompts', 'prompt')
  const version = r.str({
    check: (v) => (PROTOCOL_REVISION.test(v) ? undefined : `\`${v}\` is not an MCP protocol revision; write a date like \`2025-11-25\``),
  })
  const versions = mcp.maybe(
    'protocol_versions',
    r.list(version, { nonEmpty: true, emptyMessage: 'list the MCP revisions this route accepts, or remove the key' }),
  )
  const origins = mcp.maybe('allowed_origins', r.list(r.str({ check: checkOrigin })))
  return {
    tools,
    resources,
    prompts,
    authentication: stepUps,
    maxBodyBytes: mcp.opt('max_body', r.bytes({ min: 1 }), DEFAULT_MCP_MAX_BODY),
    filterLists: mcp.opt('filter_lists', r.bool(), true),
    protocolVersions: versions === undefined ? null : [...new Set(versions)],
    allowedOrigins: origins === undefined ? [new URL(publicUrl).origin] : [...new Set(origins)],
    approvalTools,
    approvals: readMcpApprovals(r, mcp),
  }
}

/**
 * One MCP rule: a list of scopes (the form every rule had first), or
 * `{ scopes, authentication }` when calling the tool also needs a step-up
 * (RFC 9470). undefined when refused (the problem is recorded).
 */
function readMcpRule(
  r: Reader,
  node: Node,
  path: string,
  what: string,
  scopeToken: ReturnType<Reader['str']>,
  keys: readonly string[],
): { scopes: string[]; authentication: AuthenticationRequirement | null; approval: boolean } | undefined {
  const resolved = r.resolve(node)
  if (!isMap(resolved)) {
    const scopes = r.list(scopeToken, { nonEmpty: true, emptyMessage: `list the scopes this ${what} needs, or remove it` })(node, path)
    return scopes === undefined ? undefined : { scopes: [...new Set(scopes)], authentication: null, approval: false }
  }
  const rule = r.map(node, path, keys)
  if (rule === undefined) return undefined
  const scopes = rule.maybe('scopes', r.list(scopeToken))
  const authentication = rule.has('authentication') ? readRequirement(r, rule.get('authentication'), rule.pathOf('authentication')) : null
  if ((rule.has('scopes') && scopes === undefined) || authentication === undefined) return undefined
  // A rule that only limits calls (`rate_limit`, route-rate-limits.ts) adds no scope and no sign-in.
  const other = keys.some((k) => k !== 'scopes' && k !== 'authentication' && rule.has(k))
  if ((scopes ?? []).length === 0 && authentication === null && !other) {
    r.problem(node, path, `name the \`scopes\` or the \`authentication\` this ${what} needs, or remove it`)
    return undefined
  }
  // `approval: required` (tools only, issue #41): a call waits for the person's approval (docs/approvals.md).
  const approval = keys.includes('approval') && rule.opt('approval', r.oneOf(['required'] as const, { what: 'an approval' }), null) === 'required'
  return { scopes: [...new Set(scopes ?? [])], authentication, approval }
}

/**
 * An MCP rule's `acr` must share a value with the route's rule for POST
 * (the one a tools/call meets first): no token could meet both otherwise,
 * and the client would be sent round between the two challenges.
 */
export function checkMcpStepUps(
  r: Reader,
  m: MapView,
  authentication: Record<string, AuthenticationRequirement>,
  mcp: McpRouteConfig | null,
  ranked: boolean,
): void {
  if (mcp === null) return
  const listed = Object.entries(authentication).filter(([method]) => method !== '*')
  const post = authentication.POST ?? authentication['*']
  const routeLists = (post !== undefined ? [post] : listed.map(([, rule]) => rule)).flatMap((rule) => (rule.acr === null ? [] : [rule.acr]))
  if (routeLists.length === 0) return
  for (const kind of ['tools', 'resources', 'prompts'] as const) {
    for (const [name, rule] of Object.entries(mcp.authentication[kind])) {
      if (rule.acr === null) continue
      const both = [rule.acr, ...routeLists]
      if (both.flat().some((v) => acceptedByAll(v, both, ranked))) continue
      r.problem(
        m.get('mcp'),
        `${childPath(childPath(m.pathOf('mcp'), kind), name)}.authentication.acr`,
        `no value here is one the route's \`authentication\` accepts for POST, so no token could call it; list a value of both`,
      )
    }
  }
}
