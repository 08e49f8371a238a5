/**
 * Every admin API route, in one table (router.ts), from which
 * /admin/v1/openapi.json is built too. A family adds its routes here.
 */
import { CLIENT_ROUTES } from './clients/routes.js'
import { GRANT_ROUTES } from './grants/routes.js'
import { PEOPLE_ROUTES } from './people/routes.js'
import { buildOpenApi } from './openapi.js'
import { type AdminRoute, AdminRouter } from './router.js'

const OPENAPI_ROUTE: AdminRoute = {
  method: 'GET',
  path: '/openapi.json',
  public: true,
  operation: {
    operationId: 'getOpenApi',
    summary: 'This document',
    tags: ['meta'],
    responses: { '200': { description: 'The OpenAPI 3.1 document of the admin API', schema: 'OpenApiDocument' } },
  },
  handle: async ({ admin }) => ({ status: 200, body: buildOpenApi(ADMIN_ROUTES, admin.as.issuer) }),
}

export const ADMIN_ROUTES: readonly AdminRoute[] = [OPENAPI_ROUTE, ...CLIENT_ROUTES, ...GRANT_ROUTES, ...PEOPLE_ROUTES]

export const ADMIN_ROUTER = new AdminRouter(ADMIN_ROUTES)
