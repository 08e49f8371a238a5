/**
 * /admin/v1/openapi.json: an OpenAPI 3.1 document built from the route table
 * (router.ts) and the schemas (schemas.ts), so what is served and what is
 * documented cannot drift. The tests validate every answer they get against
 * it.
 */
import { ADMIN_API_BASE, ADMIN_READ_SCOPE, ADMIN_SCOPE } from '../config/sections/admin-api.js'
import type { AdminRoute } from './router.js'
import { ADMIN_SCHEMAS } from './schemas.js'

type Json = Record<string, unknown>

const ref = (name: string): Json => ({ $ref: `#/components/schemas/${name}` })

function operationOf(route: AdminRoute): Json {
  const op = route.operation
  const parameters: Json[] = []
  for (const m of route.path.matchAll(/\{([a-z_]+)\}/g)) parameters.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } })
  for (const [name, q] of Object.entries(op.query ?? {})) parameters.push({ name, in: 'query', required: false, description: q.description, schema: q.schema })
  if (op.ifMatch !== undefined) parameters.push({ name: 'If-Match', in: 'header', required: op.ifMatch === 'required', schema: { type: 'string' } })
  const responses: Json = {}
  for (const [status, r] of Object.entries(op.responses)) {
    const response: Json = { description: r.description }
    if (r.schema !== null) response.content = { 'application/json': { schema: ref(r.schema) } }
    if (r.etag) response.headers = { ETag: { schema: { type: 'string' } } }
    responses[status] = response
  }
  // Every operation may be refused with a problem document.
  responses.default = { description: 'A problem (RFC 9457)', content: { 'application/problem+json': { schema: ref('Problem') } } }
  const out: Json = { operationId: op.operationId, summary: op.summary, tags: op.tags, responses }
  if (parameters.length > 0) out.parameters = parameters
  if (op.requestBody !== undefined) out.requestBody = { required: true, content: { 'application/json': { schema: ref(op.requestBody) } } }
  out.security = route.public ? [] : [{ bearer: [route.method === 'GET' ? ADMIN_READ_SCOPE : ADMIN_SCOPE] }]
  return out
}

/** The document for `routes`, served at `{server}/admin/v1`. */
export function buildOpenApi(routes: readonly AdminRoute[], publicUrl: string): Json {
  const paths: Record<string, Json> = {}
  for (const route of routes) {
    const item = paths[route.path] ?? {}
    item[route.method.toLowerCase()] = operationOf(route)
    paths[route.path] = item
  }
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'bearward admin API',
      version: '1',
      description: 'Manage clients, people and grants of a bearward authorization server. See docs/admin.md.',
    },
    servers: [
      { url: `${publicUrl}${ADMIN_API_BASE}`, description: 'The audience of admin tokens; the API is served on admin_listen (and at admin_api.public_path)' },
    ],
    paths,
    components: {
      schemas: ADMIN_SCHEMAS,
      securitySchemes: {
        bearer: {
          type: 'oauth2',
          description: `Access tokens of this server for the audience ${publicUrl}${ADMIN_API_BASE} (Bearer or DPoP).`,
          flows: {
            clientCredentials: {
              tokenUrl: `${publicUrl}/token`,
              scopes: { [ADMIN_SCOPE]: 'Every admin call', [ADMIN_READ_SCOPE]: 'GET calls only' },
            },
          },
        },
      },
    },
  }
}
