/**
 * What the clients endpoints do beyond reading: find the client an id names
 * wherever it lives, create and change admin-managed clients (the metadata
 * passes the one validator registration and metadata documents use,
 * src/as/client-metadata.ts), rotate a secret, disable, delete, end a
 * client's grants, and audit each change. One module for the API and the
 * pages.
 */
import type { IncomingMessage } from 'node:http'
import type { AuditEventName } from '../../audit/events.js'
import { validateClientMetadata } from '../../as/client-metadata.js'
import type { AsContext } from '../../as/context.js'
import { revokeEntry, revokeGrant } from '../../as/revocation.js'
import { OIDC_SCOPES } from '../../as/scope.js'
import { epochSeconds } from '../../clock.js'
import { ADMIN_SCOPES } from '../../config/sections/admin-api.js'
import type { ClientConfig } from '../../config/validated-config.js'
import { randomBase64url } from '../../crypto/random.js'
import { generateClientSecret, hashSecret } from '../../crypto/secret.js'
import { InvalidClientMetadata, InvalidRedirectUri } from '../../errors.js'
import type { AdminClientRecord, AdminClientUpdate, RegisteredClientMetadata } from '../../store/types.js'
import { adminActor, requestOrigin } from '../actor.js'
import type { AdminCaller } from '../auth.js'
import { AdminProblem, badRequest, conflict, notFound } from '../problem.js'

/** The client `id` names: an admin-managed one (disabled ones too), or one the flows find (YAML, registered, metadata document). */
export type FoundClient = { kind: 'admin'; record: AdminClientRecord } | { kind: 'other'; client: ClientConfig }

export async function findAnyClient(as: AsContext, id: string): Promise<FoundClient> {
  const configured = as.clients.get(id)
  if (configured !== undefined) return { kind: 'other', client: configured }
  const record = await as.store.adminClients.get(id)
  if (record !== null) return { kind: 'admin', record }
  const client = await as.findClient(id)
  if (client === undefined) throw notFound('No client with this id')
  return { kind: 'other', client }
}

/** 409 `read_only`: a client this API does not manage. */
export function readOnlyClient(client: ClientConfig): AdminProblem {
  const where = client.selfRegistered === undefined ? 'in the config: change it in YAML' : 'not managed here (it described itself)'
  return new AdminProblem(409, 'read_only', `This client is ${where}`)
}

/** Client ids the API creates: printable ASCII without spaces (RFC 6749 A.1, as YAML's), never a URL (that names a metadata document). */
const CLIENT_ID = /^[\x21-\x7e]{1,128}$/

/** Members of a create or update body that are not client metadata. */
const OWN_MEMBERS = new Set(['client_id'])

/** The scopes an operator may give a client here: every known scope but the admin API's own (admin_api.clients only). */
function grantableScopes(as: AsContext): string[] {
  return [...new Set([...Object.keys(as.as.scopes), ...OIDC_SCOPES])].filter((s) => !ADMIN_SCOPES.includes(s))
}

/** The metadata through the one validator, with the operator's wider rules; its refusal as a 400 naming the problem. */
export function validatedMetadata(as: AsContext, input: Record<string, unknown>): RegisteredClientMetadata {
  const metadata = Object.fromEntries(Object.entries(input).filter(([k]) => !OWN_MEMBERS.has(k)))
  try {
    return validateClientMetadata(metadata, { allowedScopes: grantableScopes(as), extraGrants: ['client_credentials'] })
  } catch (err) {
    if (err instanceof InvalidClientMetadata || err instanceof InvalidRedirectUri) throw badRequest(`${err.error}: ${err.description ?? err.message}`)
    throw err
  }
}

function needsSecret(metadata: RegisteredClientMetadata): boolean {
  const method = metadata.token_endpoint_auth_method
  return method === 'client_secret_basic' || method === 'client_secret_post'
}

/** Create an admin-managed client; its secret (when it has one) is returned here once, and only its hash stored. */
export async function createClient(
  as: AsContext,
  req: IncomingMessage,
  caller: AdminCaller,
  body: Record<string, unknown>,
): Promise<{ record: AdminClientRecord; secret: string | null }> {
  const id = body.client_id ?? randomBase64url(16)
  if (typeof id !== 'string' || !CLIENT_ID.test(id)) throw badRequest('client_id: 1 to 128 printable ASCII characters without spaces')
  if (/^https?:\/\//i.test(id)) throw badRequest('client_id cannot be a URL: such an id names a Client ID Metadata Document')
  const metadata = validatedMetadata(as, body)
  // Never shadow another client: a YAML client or a registered one of this id is refused.
  if (as.clients.has(id)) throw conflict(`client_id ${id} is a client in the config`)
  if ((await as.store.clients.get(id)) !== null) throw conflict(`client_id ${id} is a registered client`)
  const secret = needsSecret(metadata) ? generateClientSecret() : null
  const at = epochSeconds(as.clock)
  const record: AdminClientRecord = {
    clientId: id,
    metadata,
    secretHash: secret === null ? null : await hashSecret(secret),
    previousSecretHash: null,
    previousExpiresAt: null,
    disabled: false,
    createdAt: at,
    updatedAt: at,
    version: 1,
  }
  if (!(await as.store.adminClients.create(record))) throw conflict(`client_id ${id} is taken`)
  auditClient(as, req, caller, 'client.created', id)
  return { record, secret }
}

/** A store answer as the API's: 404 gone, 412 stale. */
export function changed(result: AdminClientUpdate): AdminClientRecord {
  if (result.kind === 'missing') throw notFound('No client with this id')
  if (result.kind === 'stale') throw new AdminProblem(412, 'precondition_failed', 'The client changed since you read it: read it again')
  return result.record
}

/** The longest overlap a rotation gives the previous secret (issue #42: 24 h), and its default. */
export const PREVIOUS_SECRET_MAX_SEC = 24 * 3600

/**
 * How far in the past a `previous_expires_at` may be and still mean "now":
 * the CLI's `--previous-expires-in 0` is the caller's clock, in whole
 * seconds, read before the request travels, so a second boundary crossed on
 * the way, or a clock a little behind the server's, would otherwise refuse
 * "end it now" with a 400.
 */
export const PAST_AS_NOW_SEC = 30

/**
 * Rotate the secret: a new one (returned once), the current one kept as the
 * previous until `previousExpiresAt` (default and at most 24 h from now).
 */
export async function rotateSecret(
  as: AsContext,
  req: IncomingMessage,
  caller: AdminCaller,
  record: AdminClientRecord,
  ifVersion: number | null,
  previousExpiresAt: number | null,
): Promise<{ record: AdminClientRecord; secret: string }> {
  if (record.secretHash === null) throw conflict('This client has no secret to rotate (public or private_key_jwt)')
  const now = epochSeconds(as.clock)
  const requested = previousExpiresAt ?? now + PREVIOUS_SECRET_MAX_SEC
  if (requested < now - PAST_AS_NOW_SEC || requested > now + PREVIOUS_SECRET_MAX_SEC) {
    throw badRequest('previous_expires_at must be from now to 24 hours from now (epoch seconds)')
  }
  // A time just past ends the previous secret now.
  const until = Math.max(requested, now)
  const secret = generateClientSecret()
  const result = await as.store.adminClients.update(
    record.clientId,
    ifVersion ?? record.version,
    { secretHash: await hashSecret(secret), previousSecretHash: record.secretHash, previousExpiresAt: until },
    now,
  )
  const next = changed(result)
  auditClient(as, req, caller, 'client.secret_rotated', record.clientId)
  return { record: next, secret }
}

/**
 * Revoke every live grant of a client (a disabled or deleted client): each
 * family ends, its access tokens are refused and its open streams ended on
 * every instance (the revocation list). Returns how many.
 */
export async function endClientGrants(as: AsContext, req: IncomingMessage, caller: AdminCaller, clientId: string): Promise<number> {
  // Its own tokens (client credentials) have no grant: the list refuses every token of it issued until now.
  await revokeEntry(as, { kind: 'client', id: clientId, exp: epochSeconds(as.clock) + as.as.accessToken.ttlSec })
  let ended = 0
  for (;;) {
    // Each revoked family leaves the index, so the first page is read again until it is empty.
    const page = await as.store.grants.listByClient(clientId, null, 100)
    if (page.length === 0) return ended
    for (const grant of page) {
      const until = Math.max(epochSeconds(as.clock) + as.as.accessToken.ttlSec, grant.maxAccessExp)
      await revokeGrant(as, grant.grantId, until)
      as.audit.record({
        event: 'grant.revoked',
        actor: adminActor(caller),
        subject: { kind: 'grant', id: grant.grantId },
        clientId,
        ...requestOrigin(req),
        outcome: 'success',
      })
      ended++
    }
  }
}

/** Record an admin action on a client in the audit trail. */
export function auditClient(as: AsContext, req: IncomingMessage, caller: AdminCaller, event: AuditEventName, clientId: string): void {
  as.audit.record({ event, actor: adminActor(caller), subject: { kind: 'client', id: clientId }, clientId, ...requestOrigin(req), outcome: 'success' })
}
