import t from 'tap'
import { readFileSync } from 'node:fs'

/**
 * docs/configuration.md cannot drift from the config's JSON Schema: every
 * key the schema accepts, at any depth, is named in the page (in backticks,
 * as a key or a dotted path), and every key the page's tables name in their
 * first column is one the schema knows.
 */

type Schema = {
  properties?: Record<string, Schema>
  $ref?: string
  items?: Schema
  anyOf?: Schema[]
  oneOf?: Schema[]
  allOf?: Schema[]
  additionalProperties?: Schema | boolean
  patternProperties?: Record<string, Schema>
  then?: Schema
  $defs?: Record<string, Schema>
}

const schema = JSON.parse(readFileSync('config/gateway.schema.json', 'utf8')) as Schema
const page = readFileSync('docs/configuration.md', 'utf8')

function resolve(s: Schema): Schema {
  if (s.$ref === undefined) return s
  const name = s.$ref.replace('#/$defs/', '')
  return schema.$defs?.[name] ?? s
}

/** Every key the schema accepts, with the path it was first met at. */
function keys(s: Schema, path: string, out: Map<string, string>, seen: Set<Schema>): void {
  const node = resolve(s)
  if (seen.has(node)) return
  seen.add(node)
  for (const [k, v] of Object.entries(node.properties ?? {})) {
    const p = path === '' ? k : `${path}.${k}`
    if (!out.has(k)) out.set(k, p)
    keys(v, p, out, seen)
  }
  for (const sub of [node.items, ...(node.anyOf ?? []), ...(node.oneOf ?? []), ...(node.allOf ?? []), node.then])
    if (sub !== undefined) keys(sub, path, out, seen)
  if (typeof node.additionalProperties === 'object') keys(node.additionalProperties, `${path}.*`, out, seen)
  for (const v of Object.values(node.patternProperties ?? {})) keys(v, `${path}.*`, out, seen)
}

t.test('every key of the schema is documented in docs/configuration.md', async (t) => {
  const all = new Map<string, string>()
  keys(schema, '', all, new Set())
  t.ok(all.size > 100, `${all.size} keys in the schema`)
  const named = new Set<string>()
  for (const m of page.matchAll(/`([^`]+)`/g)) for (const part of (m[1] ?? '').split(/[.:\s{},[\]=]+/)) named.add(part)
  const missing = [...all].filter(([k]) => !named.has(k)).map(([k, p]) => `${k} (${p})`)
  t.same(missing, [], 'keys the page does not name')
})

t.test('every key a table of the page names is one the schema knows', async (t) => {
  const all = new Map<string, string>()
  keys(schema, '', all, new Set())
  const unknown: string[] = []
  for (const line of page.split('\n')) {
    const m = /^\| `([a-z0-9_.[\]*]+)`/.exec(line)
    if (m === null) continue
    for (const part of (m[1] ?? '').split(/[.[\]*]+/).filter((p) => p !== '')) if (!all.has(part)) unknown.push(`${part} in ${m[1]}`)
  }
  t.same(unknown, [], 'table keys the schema does not have')
})
