/**
 * The admin pages at `/admin/` (docs/admin.md "Pages"): server-rendered, no
 * script, the sign-in pages' CSP and framing refusal (PAGE_HEADERS), a CSRF
 * token on every form, every action confirmed on a second form. Reachable
 * only with a pages session (session.ts) of a person in `admin_api.people`
 * with a fresh second factor; anyone else is sent to sign in (sign-in.ts),
 * or refused and audited (`admin.denied`).
 *
 * Every page sits directly under the pages' base URL, so relative links and
 * the stylesheet (`assets/bearward.css`) work at `/admin/` on admin_listen
 * and at `{public_path}/` on the main listener alike.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { serveStylesheet } from '../../as/interaction/assets.js'
import { tokensMatch } from '../../as/interaction/csrf.js'
import { redirect, showPage } from '../../as/interaction/respond.js'
import type { AsContext } from '../../as/context.js'
import { ClientAborted, OAuthError, StoreUnavailableError } from '../../errors.js'
import { AS_BODY_LIMIT, FormParams, isFormContentType, readBody } from '../../http/body.js'
import { type AdminContext, adminContextOf } from '../context.js'
import { AdminProblem } from '../problem.js'
import { findAnyClient } from '../clients/actions.js'
import {
  callApi,
  grantsOf,
  grantsOfClient,
  isPersonAction,
  PERSON_ACTIONS,
  personByUsername,
  revokeGrant,
  rotateClientSecret,
  searchClients,
} from './actions.js'
import { currentAdmin, type PagesSession, sessionCookie } from './session.js'
import { finishSignIn, type PagesPlace, startSignIn } from './sign-in.js'
import {
  type ClientDetail,
  clientPage,
  clientsPage,
  confirmPage,
  homePage,
  messageOnly,
  newSecretPage,
  type PersonDetail,
  type PersonRow,
  peoplePage,
  personPage,
} from './views.js'

/** The pages' path on either listener (after the mount point is removed): `/admin` and below, except the API's `/admin/v1`. */
export const ADMIN_PAGES_BASE = '/admin'

/** Most results a search shows; more means narrow the search. */
const MAX_RESULTS = 50
/** Most stored people a search reads through (the search is a scan of the people list). */
const MAX_SCANNED = 5000
/** Longest search text. */
const MAX_QUERY = 128

/** Answer one request to the pages. `as` null (no authorization server, or admin_api off): 404. */
export async function handleAdminPages(req: IncomingMessage, res: ServerResponse, as: AsContext | null, place: PagesPlace): Promise<void> {
  const admin = as === null ? null : adminContextOf(as)
  if (admin === null) return showPage(res, 404, messageOnly('Page not found', 'The admin pages are off (admin_api.enabled).'))
  try {
    await answer(req, res, admin, place)
  } catch (err) {
    if (err instanceof ClientAborted) return void res.destroy()
    if (res.headersSent) return void res.destroy()
    if (err instanceof StoreUnavailableError)
      return showPage(res, 503, messageOnly('Temporarily unavailable', 'The store is unavailable: try again in a moment.'))
    if (err instanceof AdminProblem && err.status < 500)
      return showPage(res, err.status, messageOnly('This request cannot be completed', err.detail, { href: './', text: 'Admin' }))
    if (err instanceof OAuthError && err.status < 500)
      return showPage(res, err.status, messageOnly('This request cannot be completed', err.description ?? err.error))
    admin.as.log.error({ err }, 'admin page failed')
    showPage(res, 500, messageOnly('Something went wrong', 'The request failed; see the server log.'))
  }
}

async function answer(req: IncomingMessage, res: ServerResponse, admin: AdminContext, place: PagesPlace): Promise<void> {
  const method = req.method ?? 'GET'
  if (place.path === '') return redirect(res, `${place.base}/`, 302)
  if (place.path === '/assets/bearward.css') return serveStylesheet(req, res)
  const get = method === 'GET' || method === 'HEAD'
  if (place.path === '/sign-in' && get) return startSignIn(res, admin, place)
  if (place.path === '/callback' && get) {
    const outcome = await finishSignIn(req, res, admin, place)
    if (outcome.kind === 'refused') denied(admin, req, outcome.sub, outcome.reason)
    return
  }
  const session = await currentAdmin(req, admin, place.secure)
  if (session === 'not_admin') {
    denied(admin, req, null, 'not_admin')
    return showPage(res, 403, messageOnly('Not an administrator', 'Your account is not one of the admin pages’ people (admin_api.people).'), {
      cookies: [sessionCookie(admin.as, null, place.secure)],
    })
  }
  // No session, or a sign-in too old or without a second factor: sign in again (max_age, acr mfa).
  if (session === 'none' || session === 'step_up') {
    if (!get)
      return showPage(res, 403, messageOnly('This form has expired', 'Sign in to the admin pages again, then try again.', { href: 'sign-in', text: 'Sign in' }))
    return redirect(res, `${place.base}/sign-in`, 303)
  }
  if (get) return showGet(req, res, admin, session, place)
  if (method !== 'POST') return showPage(res, 405, messageOnly('Method not allowed', 'Use GET or POST.'), { headers: { allow: 'GET, HEAD, POST' } })
  const form = await readForm(req, res, place)
  if (form === null) return
  if (!tokensMatch(session.csrf, form.get('csrf'))) {
    denied(admin, req, session.claims.sub, 'csrf')
    return showPage(
      res,
      403,
      messageOnly('This form has expired', 'The form was not sent from these pages, or it has expired. Go back, reload the page and try again.'),
    )
  }
  if (place.path === '/sign-out') {
    return showPage(res, 200, messageOnly('Signed out', 'You are signed out of the admin pages.', { href: 'sign-in', text: 'Sign in again' }), {
      cookies: [sessionCookie(admin.as, null, place.secure)],
    })
  }
  if (place.path === '/act') return act(req, res, admin, session, form)
  showPage(res, 404, messageOnly('Page not found', 'There is no such admin page.'))
}

/** Record a refusal of the pages (`admin.denied`, with its reason code). */
function denied(admin: AdminContext, req: IncomingMessage, sub: string | null, reason: string): void {
  admin.as.audit.record({
    event: 'admin.denied',
    actor: sub === null ? { kind: 'anonymous' } : { kind: 'person', id: sub },
    subject: { kind: 'none' },
    address: req.socket.remoteAddress ?? null,
    userAgent: req.headers['user-agent'] ?? null,
    outcome: 'failure',
    reason,
  })
}

/**
 * A form POST: refused before its body is read when it visibly comes from
 * another origin than the pages' (the Origin header, Sec-Fetch-Site); the
 * CSRF token is checked by the caller.
 */
async function readForm(req: IncomingMessage, res: ServerResponse, place: PagesPlace): Promise<FormParams | null> {
  const origin = req.headers.origin
  if ((origin !== undefined && origin !== new URL(place.base).origin) || req.headers['sec-fetch-site'] === 'cross-site') {
    showPage(res, 403, messageOnly('This form has expired', 'The form was not sent from these pages.'))
    return null
  }
  if (!isFormContentType(req.headers['content-type'])) {
    showPage(res, 400, messageOnly('This request cannot be completed', 'Send the form from the page.'))
    return null
  }
  return FormParams.parse((await readBody(req, AS_BODY_LIMIT)).toString('utf8'))
}

function signedInAs(session: PagesSession): string {
  return session.claims.sub
}

async function showGet(req: IncomingMessage, res: ServerResponse, admin: AdminContext, session: PagesSession, place: PagesPlace): Promise<void> {
  const base = { signedInAs: signedInAs(session), csrf: session.csrf }
  const q = (place.query.get('q') ?? '').slice(0, MAX_QUERY)
  const notice = noticeOf(place.query.get('done'))
  switch (place.path) {
    case '/':
      return showPage(res, 200, homePage(base))
    case '/people': {
      const found = await searchPeople(admin.as, q)
      return showPage(res, 200, peoplePage({ ...base, q, people: found.slice(0, MAX_RESULTS), more: found.length > MAX_RESULTS }))
    }
    case '/person': {
      const person = await personByUsername(admin.as, place.query.get('id') ?? '')
      if (person === null) return showPage(res, 404, messageOnly('No such person', 'Nobody has this id.', { href: './', text: 'Find a person' }))
      return showPage(res, 200, personPage({ ...base, person: await personDetail(admin, req, session, person), ...(notice === undefined ? {} : { notice }) }))
    }
    case '/clients': {
      const found = await searchClients(admin, req, session, q.toLowerCase(), MAX_RESULTS, MAX_SCANNED)
      const rows = found.slice(0, MAX_RESULTS).map((c) => ({ clientId: c.id, name: c.name, confidential: c.type === 'confidential' }))
      return showPage(res, 200, clientsPage({ ...base, q, clients: rows, more: found.length > MAX_RESULTS }))
    }
    case '/client': {
      const detail = await clientDetail(admin, req, session, place.query.get('id') ?? '')
      if (detail === null) return showPage(res, 404, messageOnly('No such client', 'No client has this id.', { href: './', text: 'Find a client' }))
      return showPage(res, 200, clientPage({ ...base, client: detail, ...(notice === undefined ? {} : { notice }) }))
    }
    default:
      return showPage(res, 404, messageOnly('Page not found', 'There is no such admin page.', { href: './', text: 'Admin' }))
  }
}

/** The status line after an action (`?done=`); anything else shows none. */
const NOTICES: Readonly<Record<string, string>> = {
  reset_factors: 'Their second factors were removed.',
  sign_out_everywhere: 'Every session of theirs ended.',
  disable: 'They are disabled.',
  revoke_grant: 'The grant was revoked: its tokens are refused.',
}

function noticeOf(done: string | null): string | undefined {
  return done === null ? undefined : NOTICES[done]
}

async function searchPeople(as: AsContext, q: string): Promise<PersonRow[]> {
  const needle = q.toLowerCase()
  const rows: PersonRow[] = []
  for (const u of as.people.configUsers()) {
    if (u.username.toLowerCase().includes(needle)) rows.push({ username: u.username, sub: u.sub, source: 'config', disabled: false })
    if (rows.length > MAX_RESULTS) return rows
  }
  let after: string | null = null
  for (let scanned = 0; scanned < MAX_SCANNED && rows.length <= MAX_RESULTS; ) {
    const page = await as.store.people.list(after, 200)
    if (page.length === 0) break
    scanned += page.length
    for (const p of page) if (p.username.toLowerCase().includes(needle)) rows.push({ username: p.username, sub: p.sub, source: 'admin', disabled: p.disabled })
    after = page[page.length - 1]?.username ?? null
  }
  return rows
}

async function personDetail(admin: AdminContext, req: IncomingMessage, session: PagesSession, person: PersonRow): Promise<PersonDetail> {
  const as = admin.as
  const totp = await as.store.totp.get(person.sub)
  const passkeys = await as.store.passkeys.list(person.sub)
  const items = await grantsOf(admin, req, session, person.sub)
  const grants = await Promise.all(
    items
      .sort((a, b) => b.created_at - a.created_at || a.client_id.localeCompare(b.client_id))
      .map(async (g) => ({ id: g.id, clientId: g.client_id, clientName: (await as.findClient(g.client_id))?.name ?? g.client_id, allowedAt: g.created_at })),
  )
  return { ...person, totp: totp?.confirmedAt != null, passkeys: passkeys.length, grants }
}

/** A client as its page shows it, wherever it lives; null when no client has this id. */
async function clientDetail(admin: AdminContext, req: IncomingMessage, session: PagesSession, id: string): Promise<ClientDetail | null> {
  let found: Awaited<ReturnType<typeof findAnyClient>>
  try {
    found = await findAnyClient(admin.as, id)
  } catch (err) {
    if (err instanceof AdminProblem && err.status === 404) return null
    throw err
  }
  const grants = await grantsOfClient(admin, req, session, id)
  if (found.kind === 'admin') {
    const r = found.record
    const name = r.metadata.client_name ?? r.clientId
    return {
      clientId: r.clientId,
      name,
      confidential: r.secretHash !== null,
      source: 'the admin API',
      rotatable: r.secretHash !== null,
      disabled: r.disabled,
      grants,
    }
  }
  const c = found.client
  const source = c.selfRegistered === undefined ? 'the config file' : c.selfRegistered === 'registration' ? 'its own registration' : 'its metadata document'
  return { clientId: c.clientId, name: c.name, confidential: c.type === 'confidential', source, rotatable: false, disabled: false, grants }
}

/**
 * POST /act on a client (`client_id`): rotate its secret, shown once on the
 * answer page, or revoke one of its grants; the confirmation step first.
 */
async function clientAct(req: IncomingMessage, res: ServerResponse, admin: AdminContext, session: PagesSession, form: FormParams): Promise<void> {
  const action = form.get('action') ?? ''
  const clientId = form.get('client_id') ?? ''
  const grantId = form.get('grant')
  const known = action === 'rotate_secret' || (action === 'revoke_grant' && grantId !== undefined)
  const detail = known ? await clientDetail(admin, req, session, clientId) : null
  if (detail === null) {
    return showPage(res, 400, messageOnly('This request cannot be completed', 'Choose an action on a client’s page.', { href: './', text: 'Admin' }))
  }
  if (form.get('confirm') !== 'yes') {
    const fields: Record<string, string> = { client_id: clientId, ...(grantId === undefined ? {} : { grant: grantId }) }
    const subject = grantId === undefined ? `client ${clientId}` : `a grant of client ${clientId}`
    return showPage(res, 200, confirmPage({ signedInAs: signedInAs(session), csrf: session.csrf, action, subject, fields }))
  }
  if (action === 'revoke_grant') {
    await revokeGrant(admin, req, session, grantId as string)
    return redirect(res, `client?id=${encodeURIComponent(clientId)}&done=revoke_grant`, 303)
  }
  // Shown on this answer only (never cached: the pages' headers say no-store); only its hash is kept.
  const rotated = await rotateClientSecret(admin, req, session, clientId)
  showPage(
    res,
    200,
    newSecretPage({
      signedInAs: signedInAs(session),
      csrf: session.csrf,
      clientId,
      secret: rotated.secret,
      previousExpiresAt: rotated.previousExpiresAt,
    }),
  )
}

/** POST /act: without `confirm=yes` the confirmation step; with it, the action (the admin API's own route), then back to the person. */
async function act(req: IncomingMessage, res: ServerResponse, admin: AdminContext, session: PagesSession, form: FormParams): Promise<void> {
  if (form.get('client_id') !== undefined) return clientAct(req, res, admin, session, form)
  const action = form.get('action') ?? ''
  const username = form.get('person') ?? ''
  const grantId = form.get('grant')
  const person = await personByUsername(admin.as, username)
  const known = isPersonAction(action) || (action === 'revoke_grant' && grantId !== undefined)
  if (!known || person === null) {
    return showPage(res, 400, messageOnly('This request cannot be completed', 'Choose an action on a person’s page.', { href: './', text: 'Admin' }))
  }
  if (form.get('confirm') !== 'yes') {
    const fields: Record<string, string> = { person: username, ...(grantId === undefined ? {} : { grant: grantId }) }
    const subject = grantId === undefined ? person.username : `a grant of ${person.username}`
    return showPage(res, 200, confirmPage({ signedInAs: signedInAs(session), csrf: session.csrf, action, subject, fields }))
  }
  if (isPersonAction(action)) {
    const { method, path } = PERSON_ACTIONS[action]
    await callApi(admin, req, session, method, path(person.username))
  } else {
    await revokeGrant(admin, req, session, grantId as string)
  }
  redirect(res, `person?id=${encodeURIComponent(person.username)}&done=${action}`, 303)
}
