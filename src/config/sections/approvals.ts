/**
 * `approvals` (top level) and a route's `mcp.approvals` (docs/approvals.md): the notification of each
 * new pending approval, the bounds on pending ones, and a route's defaults for approval-required tools.
 */
import type { Node } from 'yaml'
import type { ApprovalNotifyConfig, ApprovalsConfig, McpApprovalsConfig } from '../validated-config.js'
import { keysAt } from '../contract.js'
import type { MapView, Reader } from '../reader.js'

const APPROVALS_KEYS = keysAt('#/properties/approvals')
const NOTIFY_KEYS = keysAt('#/$defs/approvalNotify')
const MCP_APPROVALS_KEYS = keysAt('#/$defs/mcpApprovals')
/** An HMAC key shorter than this can be guessed. */
const MIN_SECRET = 32

export const DEFAULT_APPROVALS: ApprovalsConfig = { notify: null, maxPendingPerPerson: 20, maxPendingPerClient: 100 }

function readNotify(r: Reader, m: MapView): ApprovalNotifyConfig | null | undefined {
  if (!m.has('notify')) return null
  const n = r.map(m.get('notify'), m.pathOf('notify'), NOTIFY_KEYS)
  if (n === undefined) return undefined
  const url = n.req(
    'url',
    r.str({
      check: (v) => {
        try {
          const u = new URL(v)
          return u.protocol === 'https:' || u.protocol === 'http:' ? undefined : 'expected an http(s) URL'
        } catch {
          return 'expected an http(s) URL'
        }
      },
    }),
  )
  const secret = n.req('secret', r.str({ check: (v) => (v.length >= MIN_SECRET ? undefined : `the secret must be at least ${MIN_SECRET} characters`) }))
  if (url === undefined || secret === undefined) return undefined
  return { url, secret }
}

export function readApprovals(r: Reader, node: Node | undefined, path: string): ApprovalsConfig {
  if (node === undefined) return DEFAULT_APPROVALS
  const m = r.map(node, path, APPROVALS_KEYS)
  if (m === undefined) return DEFAULT_APPROVALS
  return {
    notify: readNotify(r, m) ?? null,
    maxPendingPerPerson: m.opt('max_pending_per_person', r.int({ min: 1 }), DEFAULT_APPROVALS.maxPendingPerPerson),
    maxPendingPerClient: m.opt('max_pending_per_client', r.int({ min: 1 }), DEFAULT_APPROVALS.maxPendingPerClient),
  }
}

export const DEFAULT_MCP_APPROVALS: McpApprovalsConfig = { ttlSec: 300, reuse: 'once', acr: [], maxAgeSec: 600, notify: null }

export function readMcpApprovals(r: Reader, mcp: MapView): McpApprovalsConfig {
  if (!mcp.has('approvals')) return DEFAULT_MCP_APPROVALS
  const m = r.map(mcp.get('approvals'), mcp.pathOf('approvals'), MCP_APPROVALS_KEYS)
  if (m === undefined) return DEFAULT_MCP_APPROVALS
  return {
    ttlSec: m.opt('ttl', r.seconds({ min: 1, max: 86_400 }), DEFAULT_MCP_APPROVALS.ttlSec),
    reuse: m.opt('reuse', r.oneOf(['once', 'ttl'] as const, { what: 'a reuse' }), DEFAULT_MCP_APPROVALS.reuse),
    acr: [...new Set(m.opt('acr', r.list(r.str()), []))],
    maxAgeSec: m.opt('max_age', r.seconds({ min: 1 }), DEFAULT_MCP_APPROVALS.maxAgeSec),
    notify: readNotify(r, m) ?? null,
  }
}
