/**
 * /admin/v1/clients: every client the server knows, wherever it lives
 * (view.ts). Lists are sorted by id and paginated with a signed cursor.
 */
import type { ClientConfig } from '../../config/validated-config.js'
import { pageLimit, pageOf } from '../cursor.js'
import { contentTag } from '../etag.js'
import { notFound } from '../problem.js'
import type { AdminCall, AdminRoute } from '../router.js'
import { clientView } from './view.js'

const LIST = 'clients'

async function listClients({ query, admin }: AdminCall) {
  const limit = pageLimit(query.get('limit'))
  const cursor = query.get('cursor')
  const after = cursor === null ? null : admin.cursors.decode(LIST, cursor)
  const all = [...admin.as.clients.values()].sort((a, b) => (a.clientId < b.clientId ? -1 : a.clientId > b.clientId ? 1 : 0))
  const page = pageOf<ClientConfig>(all, (c) => c.clientId, after, limit)
  return {
    status: 200,
    body: { items: page.items.map((c) => clientView(c)), next_cursor: page.last === null ? null : admin.cursors.encode(LIST, page.last) },
  }
}

async function getClient({ params, admin }: AdminCall) {
  const client = await admin.as.findClient(params.id as string)
  if (client === undefined) throw notFound('No client with this id')
  const body = clientView(client)
  return { status: 200, body, headers: { etag: contentTag(body) } }
}

export const CLIENT_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/clients',
    operation: {
      operationId: 'listClients',
      summary: 'List clients',
      tags: ['clients'],
      query: {
        limit: { schema: { type: 'integer', minimum: 1, maximum: 200 }, description: 'Page size (default 50)' },
        cursor: { schema: { type: 'string' }, description: 'next_cursor of the previous page' },
      },
      responses: { '200': { description: 'A page of clients', schema: 'ClientList' } },
    },
    handle: listClients,
  },
  {
    method: 'GET',
    path: '/clients/{id}',
    operation: {
      operationId: 'getClient',
      summary: 'Read a client',
      tags: ['clients'],
      responses: { '200': { description: 'The client', schema: 'Client', etag: true } },
    },
    handle: getClient,
  },
]
