/**
 * Validation of an RP-initiated logout request (OpenID Connect RP-Initiated
 * Logout 1.0 §2, §3). Every problem is shown to the person as an error page
 * and never redirected: a post-logout redirect happens only to a URI the
 * identified client registered, by exact string match (§3.1). A client that
 * described itself (registration, metadata document) could have registered
 * anyone's URI, so it is sent back only with an `id_token_hint` this server
 * issued to it: the proof that someone signed in to it here (otherwise
 * /logout is an open redirector for whoever registers).
 */
import type { ClientConfig } from '../../config/validated-config.js'
import { InvalidRequest } from '../../errors.js'
import type { FormParams } from '../../http/body.js'
import type { AsContext } from '../context.js'
import { verifyIdTokenHint } from './id-token-hint.js'
import { appendQuery } from './redirect-uri.js'

/** Parameters of §2 this endpoint reads; each may appear at most once. `logout_hint` and `ui_locales` are accepted and ignored. */
const SINGLE_VALUED = ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state', 'logout_hint', 'ui_locales'] as const

/** A validated logout request. */
export interface LogoutRequest {
  /** The client that asked (named by `client_id` or by the hint's audience), or null. */
  client: ClientConfig | null
  /** The verified post-logout redirect URI, or null (then the person sees a signed-out page). */
  redirectUri: string | null
  /** `state`, echoed on the redirect. */
  state: string | null
  /** The `sub` of a verified id_token_hint, or null when there was none. */
  hintSub: string | null
  /** The verified id_token_hint as sent (carried through the confirmation, which checks it again), or null. */
  hint: string | null
}

/** Where the browser goes after the logout: the redirect URI with `state` (§3), or null. */
export function postLogoutLocation(request: Pick<LogoutRequest, 'redirectUri' | 'state'>): string | null {
  if (request.redirectUri === null) return null
  return appendQuery(request.redirectUri, request.state === null ? [] : [['state', request.state]])
}

/**
 * The redirect URI `uri` when `client` registered it exactly; otherwise an
 * error naming what is missing. Also used when the confirmation form comes
 * back, so nothing the browser carried is trusted.
 */
function checkPostLogoutRedirect(client: ClientConfig | null, uri: string | undefined, hintAudiences: readonly string[] | null): string | null {
  if (uri === undefined) return null
  if (client === null) {
    throw new InvalidRequest('post_logout_redirect_uri needs the application to be named by id_token_hint or client_id')
  }
  if (!client.metadata.postLogoutRedirectUris.includes(uri)) {
    throw new InvalidRequest('The post_logout_redirect_uri is not registered for this application')
  }
  if (client.selfRegistered !== undefined && (hintAudiences === null || !hintAudiences.includes(client.clientId))) {
    throw new InvalidRequest('An application that registered itself is sent back after sign-out only with an id_token_hint issued to it')
  }
  return uri
}

/**
 * Validate the parameters of GET or POST /logout from a client.
 * @throws OAuthError (400 invalid_request) for a request to refuse.
 * @see https://openid.net/specs/openid-connect-rpinitiated-1_0.html#RPLogout
 */
export async function parseLogoutRequest(params: FormParams, as: AsContext): Promise<LogoutRequest> {
  params.assertNoRepeats(SINGLE_VALUED)
  const hintText = params.get('id_token_hint')
  const clientId = params.get('client_id')

  let hintSub: string | null = null
  let hintAudiences: string[] | null = null
  let hintClient: string | null = null
  if (hintText !== undefined) {
    const hint = await verifyIdTokenHint(as, hintText)
    if (hint === null) throw new InvalidRequest('The id_token_hint is not an ID token issued by this server')
    hintSub = hint.sub
    hintAudiences = hint.audiences
    // §2: when both are sent, client_id must be the hint's audience.
    if (clientId !== undefined && !hint.audiences.includes(clientId)) {
      throw new InvalidRequest('The client_id does not match the id_token_hint')
    }
    hintClient = clientId ?? (hint.audiences.length === 1 ? (hint.audiences[0] ?? null) : hint.azp)
  }

  let client: ClientConfig | null = null
  if (clientId !== undefined) {
    client = (await as.findClient(clientId)) ?? null
    if (client === null) throw new InvalidRequest('The application (client_id) is not registered with this server')
  } else if (hintClient !== null) {
    // An ID token of a client since removed from the config still signs the person out; it just cannot redirect.
    client = (await as.findClient(hintClient)) ?? null
  }

  const redirectUri = checkPostLogoutRedirect(client, params.get('post_logout_redirect_uri'), hintAudiences)
  return { client, redirectUri, state: params.get('state') ?? null, hintSub, hint: hintText ?? null }
}
