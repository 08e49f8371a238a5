import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AsContext } from '../context.js'
import { loginChoices, loginHeaders } from '../identity-providers/choices.js'
import type { SafeHtml } from '../views/html.js'
import { loginPage } from '../views/login.js'
import { preSessionCsrf } from './csrf.js'
import { showPage } from './respond.js'

/** What a login page is for: its purpose line and what the login form carries on to (`request`, `user_code` or `next`). */
export interface LoginPurpose {
  purpose: SafeHtml
  continuation: Readonly<Record<string, string>>
}

/** How one showing of a login page differs: its status, the message after a failure, what was typed, extra headers and cookies. */
export interface LoginShowing {
  status: number
  error?: string
  username?: string
  headers?: Readonly<Record<string, string>>
  cookies?: readonly string[]
}

/**
 * The login page, for whichever flow asks: the sign-in choices the config
 * offers, a pre-session CSRF token (its cookie set when it is new) and the
 * passkey script's CSP when passkeys are offered.
 */
export function showLoginPage(req: IncomingMessage, res: ServerResponse, as: AsContext, what: LoginPurpose, o: LoginShowing): void {
  const csrf = preSessionCsrf(req, as)
  const page = loginPage({
    ...loginChoices(as),
    purpose: what.purpose,
    csrf: csrf.token,
    continuation: what.continuation,
    ...(o.username !== undefined ? { username: o.username } : {}),
    ...(o.error !== undefined ? { error: o.error } : {}),
  })
  const headers = loginHeaders(as, o.headers)
  const cookies = [...(o.cookies ?? []), ...(csrf.setCookie ? [csrf.setCookie] : [])]
  showPage(res, o.status, page, { cookies, ...(headers ? { headers } : {}) })
}
