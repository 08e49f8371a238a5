/**
 * `audit`: where the audit trail goes (docs/operating.md, "Audit trail").
 * Absent: no trail. `stdout`, or `file:PATH` (relative to the config file's
 * directory); the file's directory must exist, the file is created when
 * missing. A change takes effect at the next restart (the trail's chain is
 * the process's).
 */
import { existsSync, statSync } from 'node:fs'
import { dirname, isAbsolute, resolve as resolvePath } from 'node:path'
import type { Node } from 'yaml'
import type { AuditDestination } from '../validated-config.js'
import type { Reader } from '../reader.js'
import { keysAt } from '../contract.js'

const AUDIT_KEYS = keysAt('#/properties/audit')
const FILE_PREFIX = 'file:'

export function readAudit(r: Reader, node: Node | undefined, path: string): AuditDestination {
  if (node === undefined) return { kind: 'off' }
  const audit = r.map(node, path, AUDIT_KEYS)
  if (audit === undefined) return { kind: 'off' }
  const destination = audit.req(
    'destination',
    r.str({
      check: (v) =>
        v === 'stdout' || (v.startsWith(FILE_PREFIX) && v.length > FILE_PREFIX.length)
          ? undefined
          : 'expected `stdout` or `file:PATH`, e.g. `file:/var/log/bearward/audit.jsonl`',
    }),
  )
  if (destination === undefined) return { kind: 'off' }
  if (destination === 'stdout') return { kind: 'stdout' }
  const raw = destination.slice(FILE_PREFIX.length)
  const file = isAbsolute(raw) ? raw : resolvePath(r.baseDir, raw)
  const dir = dirname(file)
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    r.problem(audit.get('destination'), audit.pathOf('destination'), `the directory ${dir} does not exist`)
    return { kind: 'off' }
  }
  if (existsSync(file) && !statSync(file).isFile()) {
    r.problem(audit.get('destination'), audit.pathOf('destination'), `not a regular file: ${file}`)
    return { kind: 'off' }
  }
  return { kind: 'file', path: file }
}
