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
    updated_at: { type: 'integer', description: 'Epoch seconds; admin-managed clients only' },
    previous_secret_expires_at: {
      type: ['integer', 'null'],
      description: 'Admin-managed clients only: until when the secret before the last rotation still works (epoch seconds)',
    },
  },
}

/** RFC 7591 client metadata, as the registration endpoint takes it (src/as/client-metadata.ts checks every member). */
const METADATA_PROPERTIES: Json = {
  redirect_uris: { type: 'array', items: { type: 'string' } },
  token_endpoint_auth_method: { enum: ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'] },
  grant_types: { type: 'array', items: { enum: ['authorization_code', 'refresh_token', 'client_credentials'] } },
  response_types: { type: 'array', items: { const: 'code' } },
  client_name: { type: 'string' },
  scope: { type: 'string', description: 'The scopes the client may ask for (space-separated); any known scope but the admin API’s' },
  jwks: { type: 'object' },
  jwks_uri: { type: 'string' },
  client_uri: { type: 'string' },
  logo_uri: { type: 'string' },
  policy_uri: { type: 'string' },
  tos_uri: { type: 'string' },
  contacts: { type: 'array', items: { type: 'string' } },
  post_logout_redirect_uris: { type: 'array', items: { type: 'string' } },
  require_pushed_authorization_requests: { type: 'boolean' },
  require_signed_request_object: { type: 'boolean' },
  backchannel_logout_uri: { type: 'string' },
  backchannel_logout_session_required: { type: 'boolean' },
}

export const CLIENT_SCHEMAS: Record<string, Json> = {
  Client: CLIENT,
  ClientCreate: {
    type: 'object',
    description: 'RFC 7591 client metadata (the same rules as registration, plus client_credentials), and optionally the client_id',
    properties: { client_id: { type: 'string', minLength: 1, maxLength: 128 }, ...METADATA_PROPERTIES },
  },
  ClientUpdate: {
    type: 'object',
    description: 'Members to replace (null removes one); token_endpoint_auth_method and client_id cannot change',
    properties: METADATA_PROPERTIES,
  },
  ClientCreated: {
    ...CLIENT,
    required: CLIENT.required,
    properties: {
      ...(CLIENT.properties as Json),
      client_secret: { type: 'string', description: 'Shown once: only its hash is kept' },
    },
  },
  SecretRotation: {
    type: 'object',
    additionalProperties: false,
    properties: {
      previous_expires_at: { type: 'integer', description: 'Until when the current secret keeps working (epoch seconds; default and at most 24 h from now)' },
    },
  },
  ClientSecret: {
    type: 'object',
    additionalProperties: false,
    required: ['client_id', 'client_secret', 'previous_expires_at'],
    properties: {
      client_id: { type: 'string' },
      client_secret: { type: 'string', description: 'Shown once: only its hash is kept' },
      previous_expires_at: { type: 'integer', description: 'Epoch seconds the previous secret stops working' },
    },
  },
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
