import type { ServerResponse } from 'node:http'
import type { ClientConfig } from '../../config/validated-config.js'
import type { OAuthError } from '../../errors.js'
import { unvouchedErrorPage } from '../views/authorization-error.js'
import type { RedirectTarget } from './authorization-request.js'
import { redirect, showPage } from './respond.js'

/** The page titles of the statuses an authorization error can have. */
const TITLES: Readonly<Record<number, string>> = {
  400: 'This request cannot be completed',
  500: 'Something went wrong',
  503: 'Temporarily unavailable',
}

export interface AuthorizationErrorOptions {
  /** 302 after GET /authorize; 303 after a POST. */
  status: 302 | 303
  /** Whether the person has signed in (a session), so the redirect follows their own action. */
  signedIn: boolean
  /** The application, for the page: its name, and how bearward knows it when nobody vouched for it. */
  client: Pick<ClientConfig, 'clientId' | 'name' | 'selfRegistered'>
  cookies?: readonly string[]
}

/**
 * Answer an authorization error (RFC 6749 4.1.2.1) once the redirect URI is
 * verified: at the redirect URI, except for a client nobody vouched for
 * (self-registered, metadata document) while nobody has signed in. That one
 * gets our error page, with the status of the error and no Location: RFC
 * 9700 4.11.2 says to authenticate the person before redirecting to a URI the
 * server cannot trust, or an attacker's registration turns this server into
 * an open redirector.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9700#section-4.11.2
 */
export function answerAuthorizationError(res: ServerResponse, target: RedirectTarget, err: OAuthError, o: AuthorizationErrorOptions): void {
  if (target.vouched || o.signedIn) return redirect(res, target.error(err), o.status, o.cookies ?? [])
  const page = unvouchedErrorPage({
    title: TITLES[err.status] ?? TITLES[400] ?? 'Error',
    message: err.description === undefined ? err.error : `${err.description}.`,
    error: err.error,
    clientName: o.client.name,
    known: o.client.selfRegistered === 'metadata_document' ? { how: 'metadata_document', documentHost: hostOf(o.client.clientId) } : { how: 'registration' },
    returnTo: target.displayOrigin(),
  })
  showPage(res, err.status, page, { cookies: o.cookies ?? [], headers: err.headers })
}

/** The host a metadata-document client's id (an https URL) names. */
function hostOf(clientId: string): string {
  try {
    return new URL(clientId).host
  } catch {
    return clientId
  }
}
