/** `components/schemas` of the people endpoints (see view.ts). */
type Json = Record<string, unknown>

const PERSON: Json = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'username', 'sub', 'source', 'claims', 'has_password', 'disabled'],
  properties: {
    id: { type: 'string', description: 'The username: the id in every /people/{id} path' },
    username: { type: 'string' },
    sub: { type: 'string' },
    source: { enum: ['config', 'admin'], description: '`config`: a YAML user (claims read-only); `admin`: created through this API' },
    claims: { type: 'object' },
    has_password: { type: 'boolean' },
    disabled: { type: 'boolean' },
    revision: { type: 'integer', minimum: 1, description: 'Admin-managed people only; the ETag names it' },
    created_at: { type: 'integer', description: 'Epoch seconds; admin-managed people only' },
    updated_at: { type: 'integer', description: 'Epoch seconds; admin-managed people only' },
  },
}

export const PEOPLE_SCHEMAS: Record<string, Json> = {
  Person: PERSON,
  PersonList: {
    type: 'object',
    required: ['items', 'next_cursor'],
    additionalProperties: false,
    properties: {
      items: { type: 'array', items: { $ref: '#/components/schemas/Person' } },
      next_cursor: { type: ['string', 'null'] },
    },
  },
  PersonCreate: {
    type: 'object',
    additionalProperties: false,
    required: ['username'],
    properties: {
      username: { type: 'string', minLength: 1, maxLength: 128 },
      sub: { type: 'string', minLength: 1, maxLength: 255, description: 'Default: the username' },
      claims: { type: 'object', description: 'OIDC claims; never `sub`' },
    },
  },
  PersonUpdate: {
    type: 'object',
    additionalProperties: false,
    required: ['claims'],
    properties: { claims: { type: 'object', description: 'Replaces the claims whole' } },
  },
  PasswordLink: {
    type: 'object',
    additionalProperties: false,
    required: ['url', 'expires_at'],
    properties: {
      url: { type: 'string', format: 'uri', description: 'Give it to the person: it works once, until expires_at' },
      expires_at: { type: 'integer', description: 'Epoch seconds' },
    },
  },
  Factor: {
    type: 'object',
    additionalProperties: false,
    required: ['id', 'kind', 'name', 'created_at'],
    properties: {
      id: { type: 'string', description: '`totp` for the authenticator app; a passkey: its credential id' },
      kind: { enum: ['passkey', 'totp'] },
      name: { type: 'string' },
      created_at: { type: 'integer' },
      last_used_at: { type: ['integer', 'null'] },
    },
  },
  FactorList: {
    type: 'object',
    additionalProperties: false,
    required: ['items'],
    properties: { items: { type: 'array', items: { $ref: '#/components/schemas/Factor' } } },
  },
  Ended: {
    type: 'object',
    additionalProperties: false,
    required: ['sessions_ended'],
    properties: {
      sessions_ended: { type: 'integer', minimum: 0 },
      grants_revoked: { type: 'integer', minimum: 0 },
      factors_removed: { type: 'integer', minimum: 0 },
    },
  },
}
