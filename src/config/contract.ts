/**
 * The config contract's one source: config/gateway.schema.json. The reader
 * takes every mapping's allowed keys and every enum from here, so the schema
 * editors validate against and the checks `bearward start` runs cannot
 * disagree; the reader adds what a schema cannot say (positions, "did you
 * mean", cross-checks between keys).
 *
 * A pointer that does not lead to a mapping (or an enum) throws when the
 * module loads: a schema reorganised without the reader fails every start
 * and every test, not one user's config later.
 */
import { readFileSync } from 'node:fs'

type SchemaNode = Record<string, unknown>

/** The schema file, beside `src/` and `dist/` alike (`config/` ships in the package and the image). */
const SCHEMA_URL = new URL('../../config/gateway.schema.json', import.meta.url)

export const CONFIG_SCHEMA: Readonly<SchemaNode> = JSON.parse(readFileSync(SCHEMA_URL, 'utf8')) as SchemaNode

/** Every pointer the reader asked for, so a test can show no mapping of the schema goes unread. */
const used = new Set<string>()

/** The pointers of the schema's mappings that the reader takes keys from. */
export function pointersUsed(): ReadonlySet<string> {
  return used
}

function isNode(value: unknown): value is SchemaNode {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** Follow a JSON pointer (`#/$defs/client/properties/type`) and any `$ref` at its end; `at` is where it ended. */
function resolve(pointer: string): { node: SchemaNode; at: string } {
  if (!pointer.startsWith('#')) throw new Error(`config schema: ${pointer} is not a local JSON pointer`)
  let node: unknown = CONFIG_SCHEMA
  for (const raw of pointer.slice(1).split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    node = Array.isArray(node) ? node[Number(part)] : isNode(node) ? node[part] : undefined
    if (node === undefined) throw new Error(`config schema: nothing at ${pointer}`)
  }
  if (!isNode(node)) throw new Error(`config schema: ${pointer} is not a schema object`)
  const ref = node.$ref
  return typeof ref === 'string' ? resolve(ref) : { node, at: pointer }
}

/**
 * The node at `pointer` that describes a mapping: the node itself, its
 * `$ref`, or the one branch of an `anyOf`/`oneOf` that has properties (e.g.
 * `store`, which is also a plain URL).
 */
function mappingAt(pointer: string): { node: SchemaNode; at: string } {
  const found = resolve(pointer)
  if (isNode(found.node.properties)) return found
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = found.node[key]
    if (!Array.isArray(branches)) continue
    for (const [index, branch] of branches.entries()) {
      if (!isNode(branch)) continue
      const inner = typeof branch.$ref === 'string' ? resolve(branch.$ref) : { node: branch, at: `${found.at}/${key}/${index}` }
      if (isNode(inner.node.properties)) return inner
    }
  }
  throw new Error(`config schema: ${pointer} does not describe a mapping`)
}

/** The keys a mapping may have, as the schema lists them under `properties`. */
export function keysAt(pointer: string): readonly string[] {
  const { node, at } = mappingAt(pointer)
  used.add(at)
  return Object.freeze(Object.keys(node.properties as SchemaNode))
}

/**
 * The values of the `enum` at `pointer` (an array's `items` included), typed
 * as the union the code handles. `known`, when given, is every value the
 * code can act on: a schema value outside it throws here, at load.
 */
export function enumAt<T extends string>(pointer: string, known?: readonly T[]): readonly T[] {
  let node = resolve(pointer).node
  if (node.enum === undefined && isNode(node.items)) node = typeof node.items.$ref === 'string' ? resolve(node.items.$ref).node : node.items
  const values = node.enum
  if (!Array.isArray(values) || !values.every((v): v is string => typeof v === 'string')) {
    throw new Error(`config schema: ${pointer} has no enum of strings`)
  }
  if (known !== undefined) {
    const unknown = values.filter((v) => !(known as readonly string[]).includes(v))
    if (unknown.length > 0) throw new Error(`config schema: ${pointer} allows ${unknown.join(', ')}, which the code does not handle`)
  }
  return Object.freeze(values as T[])
}
