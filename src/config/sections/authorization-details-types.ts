/**
 * `authorization_server.authorization_details_types` (RFC 9396 2): each
 * type a client may request, with the JSON Schema its entries must meet,
 * given inline or as the path of a JSON file. Every schema is compiled at
 * load, so a bad one is refused here with the type and the reason, never at
 * the first request.
 */
import { readFileSync } from 'node:fs'
import { isAbsolute, resolve as resolvePath } from 'node:path'
import { isScalar, type Node } from 'yaml'
import { compileAuthorizationDetailsSchemas } from '../authorization-details-schemas.js'
import { keysAt } from '../contract.js'
import type { Reader } from '../reader.js'

const TYPE_KEYS = keysAt('#/$defs/authorizationDetailsType')

/** RFC 9396 2: a type is a string; here printable ASCII without spaces (a name or a URI), so it can be listed and compared as written. */
export const AUTHORIZATION_DETAILS_TYPE = /^[\x21-\x7e]{1,200}$/

/** A schema file larger than this is not a schema for one authorization detail. */
const MAX_SCHEMA_FILE_BYTES = 256 * 1024

/** Type → its JSON Schema (parsed, not compiled: the authorization server compiles it once per Runtime). */
export function readAuthorizationDetailsTypes(r: Reader, node: Node | undefined, path: string): Record<string, unknown> {
  const types: Record<string, unknown> = {}
  if (node === undefined) return types
  for (const e of r.entries(node, path) ?? []) {
    if (!AUTHORIZATION_DETAILS_TYPE.test(e.key)) {
      r.problem(e.keyNode, e.path, `\`${e.key}\` is not a usable authorization details type: printable characters without spaces, at most 200`)
      continue
    }
    const m = r.map(e.value, e.path, TYPE_KEYS)
    if (m === undefined) continue
    const schemaNode = m.get('schema')
    if (schemaNode === undefined) {
      r.problem(m.node ?? e.value, m.pathOf('schema'), 'each type needs `schema`: the path of a JSON Schema file, or the schema inline')
      continue
    }
    const schema = readSchema(r, schemaNode, m.pathOf('schema'))
    if (schema === undefined) continue
    try {
      compileAuthorizationDetailsSchemas({ [e.key]: schema })
    } catch (err) {
      r.problem(schemaNode, m.pathOf('schema'), (err as Error).message)
      continue
    }
    types[e.key] = schema
  }
  return types
}

/** A schema inline (a mapping) or the path of a JSON file (relative to the config file). */
function readSchema(r: Reader, node: Node, path: string): unknown {
  const resolved = r.resolve(node)
  if (!isScalar(resolved)) return r.plainMap(node, path)
  const file = r.str()(node, path)
  if (file === undefined) return undefined
  const absolute = isAbsolute(file) ? file : resolvePath(r.baseDir, file)
  let text: string
  try {
    text = readFileSync(absolute, 'utf8')
  } catch (err) {
    r.problem(node, path, `cannot read the schema file ${absolute}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    return undefined
  }
  if (text.length > MAX_SCHEMA_FILE_BYTES) {
    r.problem(node, path, `the schema file ${absolute} is larger than ${MAX_SCHEMA_FILE_BYTES / 1024} KiB`)
    return undefined
  }
  try {
    return JSON.parse(text) as unknown
  } catch (err) {
    r.problem(node, path, `the schema file ${absolute} is not JSON: ${(err as Error).message}`)
    return undefined
  }
}
