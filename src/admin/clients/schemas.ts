/** `components/schemas` of the clients endpoints (see view.ts). */
type Json = Record<string, unknown>

const CLIENT: Json = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'name', 'source', 'type', 'token_endpoint_auth_method', 'grant_types', 'redirect_uris', 'scopes', 'has_secret', 'disabled'],
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    source: { enum: ['config', 'registration', 'metadata_document', 'admin'] },
    type: { enum: ['confidential', 'public'] },
    token_endpoint_auth_method: { type: 'string' },
    grant_types: { type: 'array', items: { type: 'string' } },
    redirect_uris: { type: 'array', items: { type: 'string' } },
    scopes: { type: 'array', items: { type: 'string' } },
    has_secret: { type: 'boolean' },
    disabled: { type: 'boolean' },
    revision: { type: 'integer', minimum: 1, description: 'Admin-managed clients only; the ETag names it' },
    created_at: { type: 'integer', description: 'Epoch seconds; admin-managed clients only' },
  },
}

export const CLIENT_SCHEMAS: Record<string, Json> = {
  Client: CLIENT,
  ClientList: {
    type: 'object',
    required: ['items', 'next_cursor'],
    additionalProperties: false,
    properties: {
      items: { type: 'array', items: { $ref: '#/components/schemas/Client' } },
      next_cursor: { type: ['string', 'null'] },
    },
  },
}
