/**
 * The JSON Schemas of `authorization_server.authorization_details_types`
 * (RFC 9396 2), compiled with ajv. The config load compiles them to refuse a
 * bad schema with a message a person can act on; the authorization server
 * compiles them once per Runtime (src/as/authorization-details/).
 *
 * Strict mode (an unknown keyword or a misspelt one is an error, not a
 * schema that accepts everything), formats checked (ajv-formats), and no
 * remote `$ref`: nothing is ever fetched, a reference outside the schema
 * itself refuses it at load.
 */
import { createRequire } from 'node:module'
import type { Ajv, ValidateFunction } from 'ajv'
import type addFormats from 'ajv-formats'

// ajv and ajv-formats (CommonJS) load on the first compile, synchronously: a config
// without authorization_details_types, and `bearward start` with one until it compiles,
// do not pay for loading them.
const require = createRequire(import.meta.url)

/** One compiled type: validate an entry, and say where it fails. */
export type DetailsValidator = ValidateFunction

/** A fresh validator set: strict, all formats, nothing loaded from elsewhere. */
function newAjv(): Ajv {
  // strictSchema: an unknown or misspelt keyword is refused; the stricter type and `required` rules would refuse schemas JSON Schema allows.
  const { Ajv: AjvClass } = require('ajv') as { Ajv: typeof Ajv }
  const formats = require('ajv-formats') as typeof addFormats
  const ajv = new AjvClass({
    strict: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    allErrors: false,
    validateSchema: true,
    validateFormats: true,
    addUsedSchema: false,
  })
  formats.default(ajv)
  return ajv
}

/**
 * Compile each type's schema. Throws an Error naming the type and what is
 * wrong (not a schema, an unknown keyword, an unresolvable `$ref`).
 * @see https://www.rfc-editor.org/rfc/rfc9396#section-2
 */
export function compileAuthorizationDetailsSchemas(schemas: Readonly<Record<string, unknown>>): Map<string, DetailsValidator> {
  const compiled = new Map<string, DetailsValidator>()
  for (const [type, schema] of Object.entries(schemas)) {
    // One ajv per type: a `$id` in one schema cannot collide with or be referenced from another.
    const ajv = newAjv()
    if (typeof schema !== 'object' && typeof schema !== 'boolean') throw new Error(`type \`${type}\`: a JSON Schema is an object (or true/false)`)
    try {
      compiled.set(type, ajv.compile(schema as object))
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err)
      throw new Error(`type \`${type}\`: its JSON Schema cannot be used: ${why.slice(0, 300)}`)
    }
  }
  return compiled
}
