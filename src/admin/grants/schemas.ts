/** `components/schemas` of the grants and tokens endpoints. */
type Json = Record<string, unknown>

export const GRANT_SCHEMAS: Record<string, Json> = {
  Grant: {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'person', 'client_id', 'scope', 'resource', 'created_at', 'expires_at'],
    properties: {
      id: { type: 'string' },
      person: { type: 'string', description: 'The person’s `sub`' },
      client_id: { type: 'string' },
      scope: { type: 'string' },
      resource: { type: ['string', 'null'] },
      created_at: { type: 'integer', description: 'Epoch seconds' },
      expires_at: { type: 'integer', description: 'Epoch seconds the refresh family ends' },
    },
  },
  GrantList: {
    type: 'object',
    required: ['items', 'next_cursor'],
    additionalProperties: false,
    properties: {
      items: { type: 'array', items: { $ref: '#/components/schemas/Grant' } },
      next_cursor: { type: ['string', 'null'] },
    },
  },
  TokenRevocation: {
    type: 'object',
    additionalProperties: false,
    required: ['jti'],
    properties: { jti: { type: 'string', minLength: 1, maxLength: 256 } },
  },
}
