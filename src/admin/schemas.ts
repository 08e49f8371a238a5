/**
 * The JSON Schemas (2020-12) of the admin API's bodies: `components/schemas`
 * of /admin/v1/openapi.json. Each family adds its own beside these.
 */
import { CLIENT_SCHEMAS } from './clients/schemas.js'
import { GRANT_SCHEMAS } from './grants/schemas.js'
import { PEOPLE_SCHEMAS } from './people/schemas.js'

type Json = Record<string, unknown>

/** A page of a list: `items`, and `next_cursor` when more follow. */
export function pageSchema(item: string): Json {
  return {
    type: 'object',
    required: ['items', 'next_cursor'],
    additionalProperties: false,
    properties: {
      items: { type: 'array', items: { $ref: `#/components/schemas/${item}` } },
      next_cursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last page' },
    },
  }
}

const CORE_SCHEMAS: Record<string, Json> = {
  Problem: {
    type: 'object',
    description: 'RFC 9457 problem details',
    required: ['type', 'title', 'status', 'detail'],
    properties: {
      type: { type: 'string', format: 'uri' },
      title: { type: 'string' },
      status: { type: 'integer', minimum: 400, maximum: 599 },
      detail: { type: 'string' },
    },
  },
  OpenApiDocument: { type: 'object', required: ['openapi', 'paths'], properties: { openapi: { const: '3.1.0' }, paths: { type: 'object' } } },
}

export const ADMIN_SCHEMAS: Record<string, Json> = { ...CORE_SCHEMAS, ...CLIENT_SCHEMAS, ...GRANT_SCHEMAS, ...PEOPLE_SCHEMAS }
