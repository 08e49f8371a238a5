/**
 * /set-password: where a person created through the admin API sets their
 * password, from the single-use link `POST /admin/v1/people/{id}/password-link`
 * returned (docs/admin.md, "People"). The link's token is in the query; the
 * store keeps only its SHA-256 and takes it once, when the form is posted
 * (a GET only looks, so a link preview does not spend it). The form is
 * CSRF-protected like the login form (pre-session double submit, same
 * origin). The admin never sees the password.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { isTokenShaped } from '../../crypto/random.js'
import { hashSecret } from '../../crypto/secret.js'
import { MethodNotAllowed } from '../../errors.js'
import { hashToken } from '../../store/hash.js'
import type { RequestContext } from '../../context.js'
import type { AsContext } from '../context.js'
import { html } from '../views/html.js'
import { hiddenFields, renderPage } from '../views/layout.js'
import { messagePage } from '../views/message.js'
import { checkPreSessionCsrf, preSessionCsrf } from './csrf.js'
import { readPageForm } from './form.js'
import { showError, showForbidden, showPage } from './respond.js'

/** Shortest and longest password accepted (NIST SP 800-63B 5.1.1: at least 8, allow at least 64). */
const MIN_LENGTH = 8
const MAX_LENGTH = 256

const GONE = messagePage({
  title: 'This link does not work',
  message: 'The link has expired, was already used, or was never valid.',
  extra: 'Ask whoever sent it for a new one.',
})

function formPage(token: string, csrf: string, error?: string): string {
  const body = html`<h1>Set your password</h1>
${error ? html`<p class="error" role="alert">${error}</p>` : ''}
<form method="post" action="set-password">
${hiddenFields({ token, csrf })}
<label for="password">New password</label>
<input id="password" name="password" type="password" autocomplete="new-password" minlength="${String(MIN_LENGTH)}" maxlength="${String(MAX_LENGTH)}" required>
<label for="confirm">The same again</label>
<input id="confirm" name="confirm" type="password" autocomplete="new-password" required>
<button type="submit">Set password</button>
</form>`
  return renderPage('Set your password', body)
}

/** The person a live link is for, or null (unknown, used, expired, person gone or disabled). */
async function linkedPerson(as: AsContext, token: string): Promise<string | null> {
  const link = await as.store.people.peekPasswordLink(hashToken(token))
  if (link === null) return null
  const person = await as.store.people.get(link.username)
  return person === null || person.disabled ? null : person.username
}

export async function setPassword(req: IncomingMessage, res: ServerResponse, _ctx: RequestContext, as: AsContext): Promise<void> {
  if (req.method === 'GET' || req.method === 'HEAD') {
    const token = new URL(req.url ?? '/', 'http://x').searchParams.get('token') ?? ''
    if (!isTokenShaped(token) || (await linkedPerson(as, token)) === null) return showPage(res, 410, GONE)
    const csrf = preSessionCsrf(req, as)
    return showPage(res, 200, formPage(token, csrf.token), { cookies: csrf.setCookie === null ? [] : [csrf.setCookie] })
  }
  if (req.method !== 'POST') return showError(res, new MethodNotAllowed(['GET', 'POST']))
  const form = await readPageForm(req, res, as)
  if (form === null) return
  if (!checkPreSessionCsrf(req, as, form.get('csrf'))) return showForbidden(res)
  const token = form.get('token') ?? ''
  const password = form.get('password') ?? ''
  if (!isTokenShaped(token)) return showPage(res, 410, GONE)
  const again = (error: string): void => showPage(res, 400, formPage(token, form.get('csrf') ?? '', error))
  if (password.length < MIN_LENGTH || password.length > MAX_LENGTH) return again(`Use ${MIN_LENGTH} to ${MAX_LENGTH} characters.`)
  if (password !== form.get('confirm')) return again('The two passwords are not the same.')
  // Taken once: of two posts of one link, one sets the password.
  const link = await as.store.people.takePasswordLink(hashToken(token))
  if (link === null) return showPage(res, 410, GONE)
  const person = await as.store.people.get(link.username)
  if (person === null || person.disabled) return showPage(res, 410, GONE)
  const updated = await as.store.people.update(person.username, null, { passwordHash: await hashSecret(password) }, Math.floor(as.clock.now() / 1000))
  if (updated.kind !== 'updated') return showPage(res, 410, GONE)
  as.audit.record({
    event: 'person.updated',
    actor: { kind: 'person', id: person.sub },
    subject: { kind: 'person', id: person.sub },
    address: as.clientAddress.of(req),
    userAgent: req.headers['user-agent'] ?? null,
    outcome: 'success',
    reason: 'password_set',
  })
  // CAEP credential-change (the Shared Signals transmitter tells the person's receivers): a first password is `create`.
  await as.credentialChanges.emit({ sub: person.sub, credentialType: 'password', changeType: person.passwordHash === null ? 'create' : 'update' })
  return showPage(res, 200, messagePage({ title: 'Password set', message: 'Your password is set. Sign in with it from the application you use.' }))
}
