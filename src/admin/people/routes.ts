/**
 * /admin/v1/people: the YAML users (`source: config`, read-only claims) and
 * the people managed here (`source: admin`), in one list sorted by username
 * (the id), and the support-desk actions that work for both: disable,
 * factors, sessions. docs/admin.md, "People".
 */
import { configUserBySub } from '../../as/people/config-users.js'
import { randomToken } from '../../crypto/random.js'
import { hashToken } from '../../store/hash.js'
import { byBytes } from '../../store/people/memory.js'
import type { PersonRecord } from '../../store/types.js'
import { pageLimit } from '../cursor.js'
import { checkRevision, contentTag, ifMatchRevision, requiredIfMatch, revisionTag } from '../etag.js'
import { readJsonObject } from '../json-body.js'
import { AdminProblem, badRequest, conflict } from '../problem.js'
import type { AdminCall, AdminReply, AdminRoute } from '../router.js'
import { auditPerson, endEverything, type Found, findPerson, removeFactors, subOf } from './actions.js'
import { configPersonView, type PersonView, storedPersonView } from './view.js'

const LIST = 'people'
/** A password link works this long (issue #42: 24 h). */
export const PASSWORD_LINK_TTL_SEC = 24 * 3600
/** Usernames the API creates: what fits a sign-in form and a URL path segment without surprises. */
const USERNAME = /^[A-Za-z0-9._@+-]{1,128}$/
const SUB = /^[\x21-\x7e]{1,255}$/

function readOnly(detail: string): AdminProblem {
  return new AdminProblem(409, 'read_only', detail)
}

function viewOf(found: Found): PersonView {
  return found.kind === 'config' ? configPersonView(found.user, found.disabled) : storedPersonView(found.record)
}

function personReply(found: Found, status = 200): AdminReply {
  const body = viewOf(found)
  const etag = found.kind === 'config' ? contentTag(body) : revisionTag(found.record.version)
  return { status, body, headers: { etag } }
}

function readClaims(value: unknown): Record<string, unknown> {
  if (value === undefined) return {}
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw badRequest('claims must be a JSON object')
  if ('sub' in value) throw badRequest('claims cannot hold `sub`: set the person’s `sub` instead')
  return value as Record<string, unknown>
}

async function listPeople({ query, admin }: AdminCall): Promise<AdminReply> {
  const limit = pageLimit(query.get('limit'))
  const cursor = query.get('cursor')
  const after = cursor === null ? null : admin.cursors.decode(LIST, cursor)
  const as = admin.as
  const yaml = [...as.people.configUsers()].filter((u) => after === null || byBytes(u.username, after) > 0).sort((a, b) => byBytes(a.username, b.username))
  const stored = await as.store.people.list(after, limit + 1)
  const merged: Array<{ username: string; view: () => Promise<PersonView> }> = [
    ...yaml.slice(0, limit + 1).map((u) => ({ username: u.username, view: async () => configPersonView(u, await as.store.people.configDisabled(u.username)) })),
    ...stored.map((p) => ({ username: p.username, view: async () => storedPersonView(p) })),
  ].sort((a, b) => byBytes(a.username, b.username))
  const page = merged.slice(0, limit)
  const more = merged.length > limit
  const last = page[page.length - 1]
  return {
    status: 200,
    body: {
      items: await Promise.all(page.map((p) => p.view())),
      next_cursor: more && last !== undefined ? admin.cursors.encode(LIST, last.username) : null,
    },
  }
}

async function createPerson({ req, caller, admin }: AdminCall): Promise<AdminReply> {
  const body = await readJsonObject(req)
  const unknown = Object.keys(body).filter((k) => !['username', 'sub', 'claims'].includes(k))
  if (unknown.length > 0) throw badRequest(`Unknown member: ${unknown.join(', ')}`)
  const { username } = body
  if (typeof username !== 'string' || !USERNAME.test(username)) throw badRequest('username: 1 to 128 letters, digits and . _ @ + -')
  const sub = body.sub ?? username
  if (typeof sub !== 'string' || !SUB.test(sub)) throw badRequest('sub: 1 to 255 printable ASCII characters without spaces')
  const claims = readClaims(body.claims)
  const as = admin.as
  // Never shadow a YAML user: the same username or sub is refused here (and at load, the other way round).
  if (as.people.configUser(username) !== undefined) throw conflict(`username ${username} is a person in the config`)
  if (configUserBySub(as.users, sub) !== undefined) throw conflict(`sub ${sub} belongs to a person in the config`)
  const at = Math.floor(as.clock.now() / 1000)
  const record: PersonRecord = { username, sub, claims, passwordHash: null, disabled: false, createdAt: at, updatedAt: at, version: 1 }
  const created = await as.store.people.create(record)
  if (created === 'username_taken') throw conflict(`username ${username} is taken`)
  if (created === 'sub_taken') throw conflict(`sub ${sub} is taken`)
  // A flag left from a YAML person of this name removed since must not disable the new one.
  await as.store.people.setConfigDisabled(username, false)
  auditPerson(as, req, caller, 'person.created', { kind: 'person', id: sub })
  const reply = personReply({ kind: 'admin', record }, 201)
  return { ...reply, headers: { ...reply.headers, location: `${as.issuer}/admin/v1/people/${encodeURIComponent(username)}` } }
}

async function getPerson({ params, admin }: AdminCall): Promise<AdminReply> {
  return personReply(await findPerson(admin.as, params.id as string))
}

async function updatePerson({ req, params, caller, admin }: AdminCall): Promise<AdminReply> {
  const as = admin.as
  const found = await findPerson(as, params.id as string)
  if (found.kind === 'config') throw readOnly('This person is in the config: change their claims in YAML')
  const expected = requiredIfMatch(req)
  const body = await readJsonObject(req)
  const unknown = Object.keys(body).filter((k) => k !== 'claims')
  if (unknown.length > 0) throw badRequest(`Only claims can change here; unknown member: ${unknown.join(', ')}`)
  if (body.claims === undefined) throw badRequest('Send claims')
  const claims = readClaims(body.claims)
  const result = await as.store.people.update(found.record.username, expected === -1 ? null : expected, { claims }, Math.floor(as.clock.now() / 1000))
  if (result.kind === 'missing') throw new AdminProblem(404, 'not_found', 'No person with this id')
  if (result.kind === 'stale') throw new AdminProblem(412, 'precondition_failed', 'The person changed since you read them: read them again')
  auditPerson(as, req, caller, 'person.updated', { kind: 'person', id: result.record.sub })
  return personReply({ kind: 'admin', record: result.record })
}

async function disablePerson({ req, params, caller, admin }: AdminCall): Promise<AdminReply> {
  const expected = ifMatchRevision(req)
  const as = admin.as
  const found = await findPerson(as, params.id as string)
  let now: Found = found
  if (found.kind === 'config') {
    await as.store.people.setConfigDisabled(found.user.username, true)
    now = { ...found, disabled: true }
  } else {
    checkRevision(expected, found.record.version)
    const result = await as.store.people.update(
      found.record.username,
      expected === null || expected === -1 ? null : expected,
      { disabled: true },
      Math.floor(as.clock.now() / 1000),
    )
    if (result.kind === 'missing') throw new AdminProblem(404, 'not_found', 'No person with this id')
    if (result.kind === 'stale') throw new AdminProblem(412, 'precondition_failed', 'The person changed since you read them: read them again')
    now = { kind: 'admin', record: result.record }
  }
  // The flag first (every sign-in and session check reads it), then what they already hold.
  await endEverything(as, caller, subOf(found), true)
  auditPerson(as, req, caller, 'person.disabled', { kind: 'person', id: subOf(found) })
  return personReply(now)
}

async function enablePerson({ req, params, caller, admin }: AdminCall): Promise<AdminReply> {
  const as = admin.as
  const found = await findPerson(as, params.id as string)
  if (found.kind === 'config') {
    await as.store.people.setConfigDisabled(found.user.username, false)
    auditPerson(as, req, caller, 'person.updated', { kind: 'person', id: subOf(found) })
    return personReply({ ...found, disabled: false })
  }
  const expected = ifMatchRevision(req)
  const result = await as.store.people.update(
    found.record.username,
    expected === null || expected === -1 ? null : expected,
    { disabled: false },
    Math.floor(as.clock.now() / 1000),
  )
  if (result.kind === 'missing') throw new AdminProblem(404, 'not_found', 'No person with this id')
  if (result.kind === 'stale') throw new AdminProblem(412, 'precondition_failed', 'The person changed since you read them: read them again')
  auditPerson(as, req, caller, 'person.updated', { kind: 'person', id: subOf(found) })
  return personReply({ kind: 'admin', record: result.record })
}

async function deletePerson({ req, params, caller, admin }: AdminCall): Promise<AdminReply> {
  const as = admin.as
  const found = await findPerson(as, params.id as string)
  if (found.kind === 'config') throw readOnly('This person is in the config: remove them from YAML')
  checkRevision(ifMatchRevision(req), found.record.version)
  const deleted = await as.store.people.delete(found.record.username)
  if (deleted === null) throw new AdminProblem(404, 'not_found', 'No person with this id')
  await endEverything(as, caller, deleted.sub, true)
  await removeFactors(as, deleted.sub, null)
  auditPerson(as, req, caller, 'person.deleted', { kind: 'person', id: deleted.sub })
  return { status: 204 }
}

async function passwordLink({ req, params, caller, admin }: AdminCall): Promise<AdminReply> {
  const as = admin.as
  const found = await findPerson(as, params.id as string)
  if (found.kind === 'config') throw readOnly('This person’s password is in the config')
  if (found.record.disabled) throw conflict('This person is disabled: enable them first')
  const token = randomToken()
  const expiresAtMs = as.clock.now() + PASSWORD_LINK_TTL_SEC * 1000
  await as.store.people.putPasswordLink(hashToken(token), { username: found.record.username, expiresAtMs })
  auditPerson(as, req, caller, 'person.updated', { kind: 'person', id: found.record.sub })
  return { status: 201, body: { url: `${as.issuer}/set-password?token=${token}`, expires_at: Math.floor(expiresAtMs / 1000) } }
}

async function listFactors({ params, admin }: AdminCall): Promise<AdminReply> {
  const as = admin.as
  const sub = subOf(await findPerson(as, params.id as string))
  const [totp, passkeys] = await Promise.all([as.store.totp.get(sub), as.store.passkeys.list(sub)])
  const items = [
    ...(totp === null ? [] : [{ id: 'totp', kind: 'totp', name: 'Authenticator app', created_at: totp.createdAt, last_used_at: null }]),
    ...passkeys.map((p) => ({ id: p.credentialId, kind: 'passkey', name: p.name, created_at: p.createdAt, last_used_at: p.lastUsedAt })),
  ]
  return { status: 200, body: { items } }
}

async function deleteFactors(call: AdminCall, only: string | null): Promise<AdminReply> {
  const { req, params, caller, admin } = call
  const as = admin.as
  const sub = subOf(await findPerson(as, params.id as string))
  const removed = await removeFactors(as, sub, only)
  if (only !== null && removed.length === 0) throw new AdminProblem(404, 'not_found', 'This person has no such factor')
  for (const id of removed) auditPerson(as, req, caller, 'factor.removed', { kind: 'factor', id, person: sub })
  return { status: 200, body: { sessions_ended: 0, factors_removed: removed.length } }
}

async function endSessions({ params, caller, admin }: AdminCall): Promise<AdminReply> {
  const as = admin.as
  const sub = subOf(await findPerson(as, params.id as string))
  const ended = await endEverything(as, caller, sub, false)
  return { status: 200, body: { sessions_ended: ended.sessions } }
}

const person = (description: string) => ({ description, schema: 'Person', etag: true })

export const PEOPLE_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/people',
    operation: {
      operationId: 'listPeople',
      summary: 'List people (YAML users and admin-managed people)',
      tags: ['people'],
      query: {
        limit: { schema: { type: 'integer', minimum: 1, maximum: 200 }, description: 'Page size (default 50)' },
        cursor: { schema: { type: 'string' }, description: 'next_cursor of the previous page' },
      },
      responses: { '200': { description: 'A page of people', schema: 'PersonList' } },
    },
    handle: listPeople,
  },
  {
    method: 'POST',
    path: '/people',
    operation: {
      operationId: 'createPerson',
      summary: 'Create a person (no password: send them a password link)',
      tags: ['people'],
      requestBody: 'PersonCreate',
      responses: {
        '201': person('The person'),
      },
    },
    handle: createPerson,
  },
  {
    method: 'GET',
    path: '/people/{id}',
    operation: { operationId: 'getPerson', summary: 'Read a person', tags: ['people'], responses: { '200': person('The person') } },
    handle: getPerson,
  },
  {
    method: 'PATCH',
    path: '/people/{id}',
    operation: {
      operationId: 'updatePerson',
      summary: 'Replace an admin-managed person’s claims',
      tags: ['people'],
      requestBody: 'PersonUpdate',
      ifMatch: 'required',
      responses: {
        '200': person('The person as changed'),
      },
    },
    handle: updatePerson,
  },
  {
    method: 'DELETE',
    path: '/people/{id}',
    operation: {
      operationId: 'deletePerson',
      summary: 'Delete an admin-managed person (sessions, grants and factors end)',
      tags: ['people'],
      ifMatch: 'optional',
      responses: {
        '204': { description: 'Deleted', schema: null },
      },
    },
    handle: deletePerson,
  },
  {
    method: 'POST',
    path: '/people/{id}/disable',
    operation: {
      operationId: 'disablePerson',
      summary: 'Disable a person: no sign-in; sessions, grants and streams end',
      tags: ['people'],
      ifMatch: 'optional',
      responses: { '200': person('The person, disabled') },
    },
    handle: disablePerson,
  },
  {
    method: 'POST',
    path: '/people/{id}/enable',
    operation: {
      operationId: 'enablePerson',
      summary: 'Enable a disabled person again',
      tags: ['people'],
      ifMatch: 'optional',
      responses: { '200': person('The person, enabled') },
    },
    handle: enablePerson,
  },
  {
    method: 'POST',
    path: '/people/{id}/password-link',
    operation: {
      operationId: 'createPasswordLink',
      summary: 'A single-use, 24 h link where the person sets their password',
      tags: ['people'],
      responses: {
        '201': { description: 'The link (shown once)', schema: 'PasswordLink' },
      },
    },
    handle: passwordLink,
  },
  {
    method: 'GET',
    path: '/people/{id}/factors',
    operation: {
      operationId: 'listFactors',
      summary: 'A person’s passkeys and authenticator app',
      tags: ['people'],
      responses: { '200': { description: 'Their second factors', schema: 'FactorList' } },
    },
    handle: listFactors,
  },
  {
    method: 'DELETE',
    path: '/people/{id}/factors',
    operation: {
      operationId: 'removeFactors',
      summary: 'Remove every passkey and the authenticator app (with mfa.required they enrol again)',
      tags: ['people'],
      responses: { '200': { description: 'What was removed', schema: 'Ended' } },
    },
    handle: (call) => deleteFactors(call, null),
  },
  {
    method: 'DELETE',
    path: '/people/{id}/factors/{factor_id}',
    operation: {
      operationId: 'removeFactor',
      summary: 'Remove one factor (`totp`, or a passkey by id)',
      tags: ['people'],
      responses: { '200': { description: 'What was removed', schema: 'Ended' } },
    },
    handle: (call) => deleteFactors(call, call.params.factor_id as string),
  },
  {
    method: 'DELETE',
    path: '/people/{id}/sessions',
    operation: {
      operationId: 'endSessions',
      summary: 'Sign the person out everywhere',
      tags: ['people'],
      responses: { '200': { description: 'How many sessions ended', schema: 'Ended' } },
    },
    handle: endSessions,
  },
]
