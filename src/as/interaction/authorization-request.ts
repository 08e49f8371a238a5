import { JKT } from '../../dpop/thumbprint.js'
import type { ClientConfig } from '../../config/validated-config.js'
import { InvalidRequest, InvalidScope, InvalidTarget, OAuthError, UnauthorizedClient, UnsupportedResponseType } from '../../errors.js'
import { FormParams } from '../../http/body.js'
import type { AsContext } from '../context.js'
import { verifyRequestObject } from '../request-object.js'
import { checkResource } from '../resource.js'
import { type HeldRequest, resolveRequestUri, startHeld } from './held-request.js'
import { appendQuery, matchRedirectUri } from './redirect-uri.js'
import { redirectUriProblem } from '../../config/client-values.js'
import { SCOPE_TOKEN } from '../../config/values.js'
import { scopeForDescription } from '../scope.js'
import { type AuthorizationDetails, parseAuthorizationDetails } from '../authorization-details/authorization-details.js'

/**
 * Validation of an authorization request (RFC 6749 4.1.1, RFC 7636 4.3,
 * OIDC Core 3.1.2.1, RFC 8707 2), in the order RFC 6749 4.1.2.1 demands:
 * client_id and redirect_uri first, and any problem with those is shown to
 * the user (never redirected, or the endpoint becomes an open redirector);
 * every later problem goes back to the verified redirect URI.
 *
 * The same function validates the request again when the login and consent
 * forms come back (the request travels through them as its raw query), so
 * nothing a browser sends after the first check is trusted.
 *
 * A request by reference or by value (RFC 9126 pushed `request_uri`, RFC
 * 9101 `request`) is resolved first, at /authorize, into a request the
 * server holds (held-request.ts); its parameters replace whatever else was
 * sent, except `client_id`, and the pages carry only its reference.
 */

/** Parameters this endpoint reads; each may appear at most once (RFC 6749 3.1). */
const SINGLE_VALUED = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'nonce',
  'dpop_jkt',
  'prompt',
  'max_age',
  'response_mode',
  'login_hint',
  'ui_locales',
  'display',
  'id_token_hint',
  'acr_values',
  'claims',
  'claims_locales',
  'request',
  'request_uri',
  'registration',
  'authorization_details',
] as const

export type Prompt = 'none' | 'login' | 'consent' | 'select_account'
const PROMPTS: ReadonlySet<string> = new Set<Prompt>(['none', 'login', 'consent', 'select_account'])

/** Scopes never granted by default when `scope` is omitted: identity and offline access must be asked for. */
const NOT_DEFAULT: ReadonlySet<string> = new Set(['openid', 'offline_access'])

const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/
/** RFC 7636 4.1: a plain challenge is the verifier itself. */
const PLAIN_CHALLENGE = /^[A-Za-z0-9._~-]{43,128}$/

/**
 * Where the authorization response goes, once client_id and redirect_uri are
 * verified. Adds `state` exactly as received and `iss` (RFC 9207 2) to every
 * response, success or error.
 */
export class RedirectTarget {
  constructor(
    /** The verified redirect URI (the registered one when redirect_uri was omitted). */
    readonly uri: string,
    readonly state: string | null,
    readonly issuer: string,
    /**
     * Whether errors may be sent to `uri` before anyone has signed in: true
     * for a configured client, whose redirect URIs an operator wrote; false
     * for one that described itself (registration, metadata document), whose
     * URI could be anyone's (RFC 9700 4.11.2).
     */
    readonly vouched: boolean = true,
  ) {}

  #with(params: Array<[string, string]>): string {
    if (this.state !== null) params.push(['state', this.state])
    params.push(['iss', this.issuer])
    return appendQuery(this.uri, params)
  }

  /** RFC 6749 4.1.2 */
  success(code: string): string {
    return this.#with([['code', code]])
  }

  /** RFC 6749 4.1.2.1 */
  error(err: OAuthError): string {
    const params: Array<[string, string]> = [['error', err.error]]
    if (err.description !== undefined) params.push(['error_description', err.description])
    return this.#with(params)
  }

  /** Where the person is sent, for the caution on a self-registered client's consent page: a host, or a custom scheme. */
  displayHost(): string {
    const url = new URL(this.uri)
    return url.host !== '' ? url.host : url.protocol
  }

  /** What the person is sent back to, for the consent page: an origin, or a custom scheme. */
  displayOrigin(): string {
    const url = new URL(this.uri)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol
  }
}

/** A fully validated authorization request. */
export interface AuthorizationRequest {
  client: ClientConfig
  target: RedirectTarget
  /** redirect_uri as sent, or null when omitted (the token request must then omit it too). */
  redirectUri: string | null
  /** Granted scopes, deduplicated, in request order. */
  scopes: string[]
  codeChallenge: string | null
  codeChallengeMethod: 'S256' | 'plain' | null
  nonce: string | null
  prompt: ReadonlySet<Prompt>
  /** OIDC max_age in seconds, or null. */
  maxAge: number | null
  /** OIDC acr_values (preferred first), or null when not sent; honoured, never ignored (authorization-steps.ts). */
  acrValues: readonly string[] | null
  /** RFC 8707 resource, or null. */
  resource: string | null
  /** RFC 9449 10: the thumbprint of the DPoP key the code is bound to, or null. */
  dpopJkt: string | null
  loginHint: string | null
  /** RFC 9396: the authorization details asked for, validated against their types' schemas; null when none. */
  authorizationDetails: AuthorizationDetails | null
  /** The request's parameters as received, carried through the login and consent forms (a held request: its reference only). */
  raw: string
  /** A request the server holds (pushed, or a request object): the started record to take when the code is issued; null otherwise. */
  held: HeldRequest | null
  /**
   * Epoch seconds from which a sign-in satisfies `prompt=login` and
   * `max_age=0`: a held request's parameters cannot be rewritten after the
   * login (as {@link afterLogin} does to a plain one), so the login is
   * judged by its time instead. Null for a plain request.
   */
  loginSince: number | null
}

export type ParsedAuthorizationRequest =
  | { kind: 'ok'; request: AuthorizationRequest }
  /** client_id or redirect_uri is wrong: show an error page, never redirect. */
  | { kind: 'page'; error: OAuthError }
  /** Anything else: send the error to the verified redirect URI (see answerAuthorizationError). */
  | { kind: 'redirect'; target: RedirectTarget; error: OAuthError; client: ClientConfig }

export interface ParseOptions {
  /**
   * True at /authorize: a pushed `request_uri` may be taken and a `request`
   * object verified there. The pages' forms (`false`) name only what
   * /authorize already resolved.
   */
  entry: boolean
}

/**
 * Validate an authorization request given as a query string (or a POSTed
 * form body, OIDC Core 3.1.2.1).
 *
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-4.1.2.1
 * @see https://www.rfc-editor.org/rfc/rfc9700#section-2.1
 * @see https://www.rfc-editor.org/rfc/rfc9126#section-4
 * @see https://www.rfc-editor.org/rfc/rfc9101#section-6.3
 */
export async function parseAuthorizationRequest(raw: string, as: AsContext, o: ParseOptions = { entry: false }): Promise<ParsedAuthorizationRequest> {
  const sent = FormParams.parse(raw)

  // 1. Client, then the request the server holds or the request object: errors here are shown, not redirected.
  let client: ClientConfig | undefined
  let held: HeldRequest | null
  try {
    const clientId = sent.get('client_id')
    if (clientId === undefined) return page(new InvalidRequest('The request has no client_id'))
    client = await as.findClient(clientId)
    if (client === undefined) return page(new InvalidRequest('The application (client_id) is not registered with this server'))
    held = await heldRequest(sent, client, as, o.entry)
  } catch (err) {
    if (err instanceof OAuthError) return page(err)
    throw err
  }
  // RFC 9126 6 / RFC 9101 10.5: a client (or this server) that asks for pushed or signed requests gets nothing else.
  if ((as.as.par.required || client.requirePushedAuthorizationRequests === true) && held?.record.pushed !== true) {
    return page(new InvalidRequest('This application must push its authorization requests (pushed authorization requests, RFC 9126)'))
  }
  if (client.requireSignedRequestObject === true && held?.record.signed !== true) {
    return page(new InvalidRequest('This application must send its authorization requests as signed request objects (RFC 9101)'))
  }
  const params = held === null ? sent : FormParams.parse(held.record.params)
  return validateAuthorizationParams(params, client, held === null ? raw : held.raw, as, held)
}

/**
 * The request the server holds for this one: a `request_uri` resolved, or a
 * `request` object verified and held (only at /authorize); null for a plain
 * request. Throws the OAuthError to show.
 */
async function heldRequest(sent: FormParams, client: ClientConfig, as: AsContext, entry: boolean): Promise<HeldRequest | null> {
  const requestUri = sent.get('request_uri')
  const requestObject = sent.get('request')
  if (requestUri !== undefined && requestObject !== undefined) throw new InvalidRequest('Send request or request_uri, not both')
  if (requestUri !== undefined) return resolveRequestUri(as, client.clientId, requestUri, entry)
  if (requestObject === undefined) return null
  // The pages carry a held request's reference, never the object: one arriving there was not sent by /authorize.
  if (!entry) throw new InvalidRequest('A request object is accepted at the authorization endpoint only')
  const params = await verifyRequestObject(as, client, requestObject)
  return startHeld(as, client.clientId, new URLSearchParams(params).toString(), { signed: true, pushed: false })
}

/**
 * Validate the parameters of an authorization request of `client` (the
 * request as sent, a held request's, or a pushed one at /par). `raw` is what
 * the pages carry on.
 */
export function validateAuthorizationParams(
  params: FormParams,
  client: ClientConfig,
  raw: string,
  as: AsContext,
  held: HeldRequest | null,
): ParsedAuthorizationRequest {
  let redirectUri: string | undefined
  try {
    redirectUri = params.get('redirect_uri')
  } catch (err) {
    if (err instanceof OAuthError) return page(err)
    throw err
  }
  const effective = matchRedirectUri(client.redirectUris, redirectUri, client.type === 'public')
  if (effective === null) {
    return page(
      new InvalidRequest(
        redirectUri === undefined
          ? 'The request has no redirect_uri, and the application has more than one registered'
          : 'The redirect_uri is not registered for this application',
      ),
    )
  }

  // A URI stored before the rules of src/config/client-values.ts could not go into a Location header.
  if (redirectUriProblem(effective) !== undefined) {
    return page(new InvalidRequest('The redirect URI registered for this application cannot be used; the application must register it again'))
  }
  // FAPI 2.0 5.3.2.2: a FAPI client names its redirect URI in every (pushed) request.
  if (client.profile === 'fapi2' && redirectUri === undefined) {
    return page(new InvalidRequest('This application must send redirect_uri (FAPI 2.0)'))
  }
  const vouched = client.selfRegistered === undefined

  // 2. Everything else is answered at the redirect URI (for a client nobody vouched for, only once the person signed in).
  let state: string | null = null
  try {
    state = params.get('state') ?? null
  } catch (err) {
    if (!(err instanceof OAuthError)) throw err
    return { kind: 'redirect', target: new RedirectTarget(effective, null, as.issuer, vouched), error: err, client }
  }
  const target = new RedirectTarget(effective, state, as.issuer, vouched)
  try {
    const request = validateRest(params, client, target, redirectUri ?? null, raw, as)
    return { kind: 'ok', request: { ...request, held, loginSince: held?.record.startedAt ?? null } }
  } catch (err) {
    if (err instanceof OAuthError) return { kind: 'redirect', target, error: err, client }
    throw err
  }
}

function page(error: OAuthError): ParsedAuthorizationRequest {
  return { kind: 'page', error }
}

function validateRest(
  params: FormParams,
  client: ClientConfig,
  target: RedirectTarget,
  redirectUri: string | null,
  raw: string,
  as: AsContext,
): Omit<AuthorizationRequest, 'held' | 'loginSince'> {
  params.assertNoRepeats(SINGLE_VALUED)

  // A held request's parameters never hold another reference (resolved before, refused at /par and in request objects).
  if (params.get('request') !== undefined || params.get('request_uri') !== undefined) {
    throw new InvalidRequest('request and request_uri cannot be nested')
  }
  const responseMode = params.get('response_mode')
  if (responseMode !== undefined && responseMode !== 'query') {
    throw new InvalidRequest('Only response_mode=query is supported')
  }

  // RFC 6749 4.1.1; RFC 9700 2.1.2: no response type that returns a token.
  const responseType = params.get('response_type')
  if (responseType === undefined) throw new InvalidRequest('The request has no response_type')
  if (responseType !== 'code') throw new UnsupportedResponseType()
  if (!client.grantTypes.includes('authorization_code')) {
    throw new UnauthorizedClient('This application may not use the authorization code grant')
  }

  const scopes = parseScopes(params.get('scope'), client, as)
  const pkce = parsePkce(params, client)
  const prompt = parsePrompt(params.get('prompt'))
  const maxAge = parseMaxAge(params.get('max_age'))
  const acrValues = parseAcrValues(params.get('acr_values'))
  const resource = parseResource(params, as)
  const dpopJkt = params.get('dpop_jkt') ?? null
  const details = params.get('authorization_details')
  // RFC 9396 5: refused as invalid_authorization_details at the redirect URI, as any other parameter.
  const authorizationDetails = details === undefined ? null : parseAuthorizationDetails(details, as.authorizationDetailsTypes, client.authorizationDetailsTypes)
  if (dpopJkt !== null && !JKT.test(dpopJkt)) throw new InvalidRequest('dpop_jkt is a SHA-256 JWK thumbprint: 43 base64url characters')

  return {
    client,
    target,
    redirectUri,
    scopes,
    codeChallenge: pkce.challenge,
    codeChallengeMethod: pkce.method,
    nonce: params.get('nonce') ?? null,
    prompt,
    maxAge,
    acrValues,
    resource,
    dpopJkt,
    loginHint: params.get('login_hint') ?? null,
    authorizationDetails,
    raw,
  }
}

/**
 * RFC 6749 3.3. Every scope must be known and allowed to the client. When
 * `scope` is omitted the client gets its configured scopes except `openid`
 * and `offline_access` (an id_token or a long-lived grant is only ever issued
 * when asked for by name).
 */
function parseScopes(value: string | undefined, client: ClientConfig, as: AsContext): string[] {
  if (value === undefined) return client.scopes.filter((s) => !NOT_DEFAULT.has(s))
  const scopes = [...new Set(value.split(' ').filter((s) => s !== ''))]
  for (const scope of scopes) {
    if (!Object.hasOwn(as.as.scopes, scope) || !client.scopes.includes(scope)) {
      // Named (issue #42) only when it is a scope token: error_description allows no `"` or `\` (RFC 6749 4.1.2.1).
      if (!SCOPE_TOKEN.test(scope)) throw new InvalidScope('The scope parameter is malformed')
      throw new InvalidScope(`The requested scope \`${scopeForDescription(scope)}\` is unknown or not allowed for this application`)
    }
  }
  return scopes
}

/** RFC 7636 4.3 and 4.4.1; RFC 9700 2.1.1 (PKCE required for public clients; S256 only by default). */
function parsePkce(params: FormParams, client: ClientConfig): { challenge: string | null; method: 'S256' | 'plain' | null } {
  const challenge = params.get('code_challenge')
  const method = params.get('code_challenge_method')
  if (method !== undefined && method !== 'S256' && method !== 'plain') {
    throw new InvalidRequest('code_challenge_method must be S256')
  }
  if (challenge === undefined) {
    if (method !== undefined) throw new InvalidRequest('code_challenge_method was sent without code_challenge')
    if (client.type === 'public' || client.requirePkce || client.profile === 'fapi2') throw new InvalidRequest('code_challenge is required (PKCE, RFC 7636)')
    return { challenge: null, method: null }
  }
  // RFC 7636 4.3: an omitted method means plain.
  const effective = method ?? 'plain'
  if (effective === 'plain') {
    // FAPI 2.0 5.3.2.2: S256 only (the config refuses `allow_plain_pkce` with the profile; this holds whatever a client record says).
    if (!client.allowPlainPkce || client.profile === 'fapi2') throw new InvalidRequest('code_challenge_method must be S256')
    if (!PLAIN_CHALLENGE.test(challenge)) throw new InvalidRequest('A plain code_challenge is 43 to 128 unreserved characters')
    return { challenge, method: 'plain' }
  }
  if (!S256_CHALLENGE.test(challenge)) throw new InvalidRequest('An S256 code_challenge is exactly 43 base64url characters')
  return { challenge, method: 'S256' }
}

/** OIDC Core 3.1.2.1: `none` cannot be combined with another value. */
function parsePrompt(value: string | undefined): ReadonlySet<Prompt> {
  const prompt = new Set<Prompt>()
  if (value === undefined) return prompt
  for (const p of value.split(' ')) {
    if (p === '') continue
    if (!PROMPTS.has(p)) throw new InvalidRequest('prompt must be none, login, consent or select_account')
    prompt.add(p as Prompt)
  }
  if (prompt.has('none') && prompt.size > 1) throw new InvalidRequest('prompt=none cannot be combined with other values')
  return prompt
}

/** OIDC Core 3.1.2.1: max_age in whole seconds. */
function parseMaxAge(value: string | undefined): number | null {
  if (value === undefined) return null
  if (!/^\d{1,10}$/.test(value)) throw new InvalidRequest('max_age must be a whole number of seconds')
  return Number(value)
}

/** At most this many acr values, each at most this long (ours are three letters). */
const MAX_ACR_VALUES = 10
const MAX_ACR_LENGTH = 200
const ACR_VALUE = /^[\x21-\x7e]+$/

/**
 * OIDC Core 3.1.2.1: space-separated acr values in order of preference.
 * An empty list is as if none were sent; a value that is not printable
 * ASCII, too long, or too many of them is refused (invalid_request).
 */
function parseAcrValues(value: string | undefined): readonly string[] | null {
  if (value === undefined) return null
  const values = [...new Set(value.split(' ').filter((v) => v !== ''))]
  if (values.length === 0) return null
  if (values.length > MAX_ACR_VALUES || !values.every((v) => v.length <= MAX_ACR_LENGTH && ACR_VALUE.test(v))) {
    throw new InvalidRequest(`acr_values is at most ${MAX_ACR_VALUES} space-separated values of printable characters`)
  }
  return values
}

/**
 * RFC 8707 2: `resource` names where the token will be used; the same rule
 * as at /token (`checkResource`). A code carries one audience, so a second
 * `resource` is refused as invalid_target.
 */
function parseResource(params: FormParams, as: AsContext): string | null {
  const all = params.getAll('resource')
  if (all.length === 0) return null
  if (all.length > 1) throw new InvalidTarget('Only one resource may be requested')
  return checkResource(all[0] as string, as)
}

/**
 * The request to continue with after a successful login: the same
 * parameters without `prompt=login` and `max_age`, which that login has just
 * satisfied (otherwise the next step would ask for a login again, forever).
 */
export function afterLogin(raw: string): string {
  const params = new URLSearchParams(raw)
  const prompt = params.get('prompt')
  if (prompt !== null) {
    const rest = prompt.split(' ').filter((p) => p !== '' && p !== 'login')
    if (rest.length === 0) params.delete('prompt')
    else params.set('prompt', rest.join(' '))
  }
  params.delete('max_age')
  return params.toString()
}
