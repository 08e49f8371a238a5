/**
 * config/gateway.schema.json (for editors) and the runtime validator must
 * agree: every good fixture passes both, every bad fixture is refused by both
 * at the same place, and both know the same keys.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js'
import { parseDocument } from 'yaml'
import { checkConfig } from '../../src/config/load.js'
import { enumAt, keysAt, pointersUsed } from '../../src/config/contract.js'
import { CLIENT_KEYS, GRANT_TYPES } from '../../src/config/sections/clients.js'
import { TOP_LEVEL_KEYS } from '../../src/config/validate.js'
import { describe } from './helpers.js'

type Schema = Record<string, unknown>

const schema = JSON.parse(readFileSync('config/gateway.schema.json', 'utf8')) as Schema
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false })
const validate = ajv.compile(schema)

const GOOD = resolve('test/fixtures/config/good')
const BAD = resolve('test/fixtures/config/bad')
const yamlFiles = (dir: string): string[] =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()

/** The YAML as editors see it: plain data, env references left as written. */
function data(file: string): unknown {
  const doc = parseDocument(readFileSync(file, 'utf8'), { merge: true })
  if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message}`)
  return doc.toJS()
}

/** `routes[0].match["odd key"]` → `/routes/0/match/odd key` */
function pointer(path: string): string {
  const parts: string[] = []
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g)) {
    parts.push(m[1] ?? m[2] ?? (JSON.parse(m[3] ?? '""') as string))
  }
  return parts.map((p) => '/' + p.replace(/~/g, '~0').replace(/\//g, '~1')).join('')
}

function schemaErrors(value: unknown): ErrorObject[] {
  return validate(value) ? [] : [...(validate.errors ?? [])]
}

t.test('the schema is a valid draft 2020-12 schema with additionalProperties false on every object', async (t) => {
  t.equal(schema.$schema, 'https://json-schema.org/draft/2020-12/schema')
  // An inline JWK is free-form by design (RFC 7517 allows any member).
  const freeForm = new Set(['#/$defs/authorizationServer/properties/keys/items/properties/jwk'])
  const open: string[] = []
  const walk = (node: unknown, where: string): void => {
    if (node === null || typeof node !== 'object') return
    const n = node as Schema
    if (n.properties !== undefined && n.additionalProperties !== false && !freeForm.has(where)) open.push(where)
    for (const [k, v] of Object.entries(n)) {
      // Conditional branches only add constraints to an object defined elsewhere.
      if (!['if', 'then', 'else', 'not'].includes(k)) walk(v, `${where}/${k}`)
    }
  }
  walk(schema, '#')
  t.same(open, [], 'every object with named properties refuses others')
})

t.test('the example config and every good fixture pass the schema and the runtime validator', async (t) => {
  const files = [resolve('config/gateway.yaml'), ...yamlFiles(GOOD).map((f) => join(GOOD, f))]
  t.ok(files.length >= 4)
  for (const file of files) {
    t.same(schemaErrors(data(file)), [], `schema: ${file}`)
    const { problems } = await checkConfig(file, { CORP_SECRET: 'x' })
    t.same(problems, [], `runtime: ${file}\n${describe(problems)}`)
  }
})

t.test('every bad fixture is refused by both, at the expected place', async (t) => {
  const files = yamlFiles(BAD)
  t.ok(files.length >= 25, 'a real set of bad configs')
  for (const name of files) {
    const file = join(BAD, name)
    const expectations = [...readFileSync(file, 'utf8').matchAll(/^# expect: (\S*) :: (.+)$/gm)].map((m) => ({ path: m[1] ?? '', text: m[2] ?? '' }))
    t.ok(expectations.length > 0, `${name} says what it expects`)

    const { config, problems } = await checkConfig(file, {})
    t.equal(config, null, `runtime refuses ${name}`)
    for (const e of expectations) {
      t.ok(
        problems.some((p) => p.path === e.path && p.message.includes(e.text) && p.line > 1),
        `runtime: ${name} has "${e.text}" at ${e.path}\n${describe(problems)}`,
      )
    }

    const errors = schemaErrors(data(file))
    t.ok(errors.length > 0, `schema refuses ${name}`)
    for (const e of expectations) {
      const target = pointer(e.path)
      const parent = target.slice(0, target.lastIndexOf('/'))
      t.ok(
        errors.some((err) => err.instancePath === target || err.instancePath === parent),
        `schema: ${name} has an error at ${target} (or its parent)\n${errors.map((err) => `${err.instancePath} ${err.message}`).join('\n')}`,
      )
    }
  }
})

t.test('the reader takes the keys of every mapping of the schema, and its enums, from the schema itself', async (t) => {
  // Conditional branches (if/then/else/not) only narrow a mapping defined elsewhere; an inline JWK is free-form.
  const mappings: string[] = []
  const walk = (node: unknown, where: string): void => {
    if (node === null || typeof node !== 'object') return
    const n = node as Schema
    if (n.properties !== undefined && where !== '#/$defs/authorizationServer/properties/keys/items/properties/jwk') mappings.push(where)
    for (const [k, v] of Object.entries(n)) if (!['if', 'then', 'else', 'not'].includes(k)) walk(v, `${where}/${k}`)
  }
  walk(schema, '#')
  t.same([...pointersUsed()].sort(), mappings.sort(), 'every mapping of the schema is read with its own keys, and the reader asks for no other')

  // The exported lists are the schema's (spot checks that the reader really reads this file).
  const defs = schema.$defs as Record<string, Schema>
  const keysOf = (node: Schema | undefined): string[] => Object.keys((node?.properties as Schema | undefined) ?? {})
  t.same(CLIENT_KEYS, keysOf(defs.client))
  t.same(TOP_LEVEL_KEYS, keysOf(schema))
  const clientProperties = (defs.client?.properties ?? {}) as Record<string, Schema>
  const grants = ((clientProperties.grant_types?.items ?? {}) as Schema).enum as string[]
  t.same(
    [...GRANT_TYPES],
    grants.filter((g) => g !== 'device_code' && g !== 'jwt-bearer' && g !== 'token-exchange' && g !== 'ciba'),
    'grant types (the schema also lists the `device_code`, `jwt-bearer`, `token-exchange` and `ciba` shorthands)',
  )
})

t.test('an enum value the code does not handle, or a pointer to nothing, stops the process at load', async (t) => {
  t.throws(() => enumAt('#/$defs/issuer/properties/algorithms', ['RS256']), /allows RS384, .* which the code does not handle/)
  t.throws(() => keysAt('#/$defs/nothing'), /nothing at #\/\$defs\/nothing/)
  t.throws(() => keysAt('#/$defs/route/properties/token'), /does not describe a mapping/)
  t.throws(() => enumAt('#/$defs/route'), /has no enum of strings/)
})

t.test('the schema accepts ${VAR} where a typed value is expected', async (t) => {
  const value = {
    listen: '${LISTEN}',
    shutdown_timeout: '${GRACE:-10s}',
    request_id: { trust_incoming: '${TRUST}' },
    routes: [{ name: 'r', match: { path: '/r' }, upstream: '${UPSTREAM}', max_body: '${MAX_BODY:-1mb}', public: '${PUBLIC:-false}' }],
  }
  t.same(schemaErrors(value), [])
  t.ok(schemaErrors({ shutdown_timeout: 'soon' }).length > 0)
})
