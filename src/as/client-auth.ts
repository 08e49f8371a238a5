/**
 * Client authentication at the back-channel endpoints (/token, /revoke,
 * /introspect, /device_authorization).
 *
 * - client_secret_basic (RFC 6749 2.3.1): every confidential client may use it.
 * - client_secret_post: only a client registered with that method.
 * - none: a public client names itself with `client_id` in the body.
 * - private_key_jwt (RFC 7523 2.2): a `client_assertion` JWT signed with the
 *   client's key (client-assertion.ts); only a client registered with it.
 * - workload identity (RFC 7523 2.2 with a third-party issuer): a
 *   `client_assertion` issued by a `kind: workload` assertion issuer (a
 *   Kubernetes service account token, a SPIFFE JWT-SVID), whose `sub` the
 *   issuer's `subjects` map to the client. Platform tokens are reused for
 *   their lifetime by design, so their jti is not single use here.
 * - tls_client_auth (RFC 8705 2.1): `client_id` in the body and a client
 *   certificate whose chain `tls.client_ca` (or the trusted proxy) verified,
 *   carrying the subject DN or the one SAN the client is registered with.
 * - self_signed_tls_client_auth (RFC 8705 2.2): `client_id` in the body and
 *   a client certificate, verified or not, whose public key is one of the
 *   client's `jwks`: the TLS handshake proved the client holds its key.
 * Using two methods at once is `invalid_request` (RFC 6749 2.3); every other
 * failure is 401 `invalid_client` with a Basic challenge (RFC 6749 5.2).
 * A refused assertion counts in the same failure limit as a wrong secret.
 */
import type { IncomingMessage } from 'node:http'
import type { ClientConfig, TlsClientAuthName } from '../config/validated-config.js'
import { DUMMY_HASH } from '../crypto/secret.js'
import { epochSeconds } from '../clock.js'
import { ClientAuthenticationLocked, InvalidClient, InvalidClientAssertion, InvalidClientCertificate, InvalidRequest } from '../errors.js'
import type { FormParams } from '../http/body.js'
import type { ClientCertificate } from '../http/client-certificate.js'
import { assertionClientId, CLIENT_ASSERTION_TYPE, verifyClientAssertion } from './client-assertion.js'
import type { AsContext } from './context.js'
import { unverifiedPayload } from './jwt-assertion.js'
import { clientAuthLimit, type FailureLimit } from './throttle.js'

/** Client authentication parameters every back-channel endpoint reads (and refuses repeated, RFC 6749 3.2). */
export const CLIENT_AUTH_PARAMS: readonly string[] = ['client_id', 'client_secret', 'client_assertion', 'client_assertion_type']

/** How the client proved who it is. */
export type ClientAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none' | 'private_key_jwt' | 'tls_client_auth' | 'self_signed_tls_client_auth'

export interface AuthenticatedClient {
  client: ClientConfig
  method: ClientAuthMethod
}

export interface ClientAuthOptions {
  /** Refuse public clients (their identity is not proven): used by /introspect. */
  confidentialOnly?: boolean
}

/** Credentials found in the request, before they are checked. */
type Presented =
  | { clientId: string; secret: string | null; method: 'client_secret_basic' | 'client_secret_post' | 'none' }
  | { clientId: string; assertion: string; method: 'private_key_jwt' }
  | { bodyClientId: string | undefined; assertion: string; method: 'workload' }

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/**
 * RFC 6749 2.3.1: the client id and secret are form-urlencoded before they go
 * into the Basic credentials, so `+` is a space and `%XX` an octet.
 */
function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '))
  } catch {
    throw new InvalidClient('The client credentials are malformed', { cause: 'basic credentials: bad percent-encoding' })
  }
}

/** Parse `Authorization: Basic ...`; null when the header is absent. */
function parseBasic(header: string | undefined): { clientId: string; secret: string } | null {
  if (header === undefined) return null
  const space = header.indexOf(' ')
  const scheme = space === -1 ? header : header.slice(0, space)
  if (scheme.toLowerCase() !== 'basic') {
    throw new InvalidClient('Use HTTP Basic to authenticate the client', { cause: 'unsupported authorization scheme' })
  }
  const encoded = header.slice(space + 1).trim()
  if (space === -1 || !BASE64.test(encoded)) {
    throw new InvalidClient('The client credentials are malformed', { cause: 'basic credentials: not base64' })
  }
  const decoded = Buffer.from(encoded, 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon === -1) throw new InvalidClient('The client credentials are malformed', { cause: 'basic credentials: no colon' })
  const clientId = formDecode(decoded.slice(0, colon))
  const secret = formDecode(decoded.slice(colon + 1))
  if (clientId === '') throw new InvalidClient('The client credentials are malformed', { cause: 'basic credentials: empty client id' })
  return { clientId, secret }
}

/** What the request presents, refusing requests that use more than one method. */
function presented(req: IncomingMessage, form: FormParams, as: AsContext): Presented {
  const basic = parseBasic(req.headers.authorization)
  const bodyId = form.get('client_id')
  const bodySecret = form.get('client_secret')
  const assertionType = form.get('client_assertion_type')
  const assertion = form.get('client_assertion')
  if (assertionType !== undefined || assertion !== undefined) {
    if (basic !== null || bodySecret !== undefined) throw new InvalidRequest('Use only one client authentication method')
    if (assertionType !== CLIENT_ASSERTION_TYPE) {
      throw new InvalidClient('Unsupported client_assertion_type', { cause: 'client_assertion_type is not jwt-bearer' })
    }
    if (assertion === undefined || assertion === '') throw new InvalidRequest('client_assertion is missing')
    // A platform's token names the workload, not the client: the issuer's mapping finds the client.
    if (as.assertionIssuers.issuerOf(assertion, 'workload') !== undefined) return { bodyClientId: bodyId, assertion, method: 'workload' }
    const clientId = assertionClientId(assertion)
    // RFC 7523 3.1: a client_id sent beside the assertion must name the same client.
    if (bodyId !== undefined && bodyId !== clientId) throw new InvalidClientAssertion({ cause: 'client assertion: sub differs from client_id' })
    return { clientId, assertion, method: 'private_key_jwt' }
  }
  if (basic !== null) {
    if (bodySecret !== undefined) throw new InvalidRequest('Use only one client authentication method')
    if (bodyId !== undefined && bodyId !== basic.clientId) {
      throw new InvalidRequest('client_id in the body does not match the authenticated client')
    }
    return { clientId: basic.clientId, secret: basic.secret, method: 'client_secret_basic' }
  }
  if (bodyId === undefined) {
    throw new InvalidClient('Client authentication is required', { cause: 'no client credentials' })
  }
  if (bodySecret !== undefined) return { clientId: bodyId, secret: bodySecret, method: 'client_secret_post' }
  return { clientId: bodyId, secret: null, method: 'none' }
}

function refuseWorkload(cause: string): InvalidClientAssertion {
  return new InvalidClientAssertion({ cause: `workload token: ${cause}` })
}

/**
 * The client a workload token authenticates: the token verified as its
 * issuer's (assertion-issuers.ts), its `sub` mapped by the issuer's
 * `subjects`, and that client a configured private_key_jwt client.
 */
async function workloadClient(as: AsContext, assertion: string, bodyClientId: string | undefined): Promise<ClientConfig> {
  const { issuer, claims } = await as.assertionIssuers.verify(assertion, 'workload', refuseWorkload)
  const clientId = Object.hasOwn(issuer.subjects, claims.sub) ? issuer.subjects[claims.sub] : undefined
  if (clientId === undefined) throw refuseWorkload('unmapped subject')
  if (bodyClientId !== undefined && bodyClientId !== clientId) throw refuseWorkload('client mismatch: client_id is not the mapped client')
  const client = as.clients.get(clientId)
  if (client === undefined || client.tokenEndpointAuthMethod !== 'private_key_jwt') throw refuseWorkload('the mapped client is not a private_key_jwt client')
  return client
}

/** The private_key_jwt client `clientId`, once its assertion holds. */
async function keyedClient(as: AsContext, clientId: string, assertion: string, url: string): Promise<ClientConfig> {
  const client = await as.findClient(clientId)
  if (client === undefined) throw new InvalidClientAssertion({ cause: 'client assertion: unknown client' })
  if (client.tokenEndpointAuthMethod !== 'private_key_jwt') {
    throw new InvalidClientAssertion({ cause: 'client assertion: the client is not registered for private_key_jwt' })
  }
  await verifyClientAssertion(as, client, assertion, url)
  return client
}

/**
 * The name a workload token's failures count under: the client its
 * (unverified) `sub` maps to, else its issuer. Only a counter key: the
 * token is verified before anything trusts it.
 */
function workloadName(as: AsContext, assertion: string): string {
  const issuer = as.assertionIssuers.issuerOf(assertion, 'workload')
  const sub = unverifiedPayload(assertion)?.sub
  const mapped = issuer !== undefined && typeof sub === 'string' && Object.hasOwn(issuer.subjects, sub) ? issuer.subjects[sub] : undefined
  return mapped ?? issuer?.issuer ?? ''
}

/**
 * Run an assertion check under the failure limit secrets have: refused
 * without a check while locked, and a refused assertion (bad signature,
 * wrong aud, replayed jti, unknown kid...) counts as a failure. An outage
 * (keys or store unreachable) is not the client's failure and is not counted.
 */
async function counted(limit: FailureLimit, check: () => Promise<ClientConfig>): Promise<ClientConfig> {
  const lockedFor = await limit.lockedFor()
  if (lockedFor > 0) throw new ClientAuthenticationLocked(lockedFor)
  try {
    return await check()
  } catch (err) {
    if (err instanceof InvalidClientAssertion) await limit.fail()
    throw err
  }
}

/** Why `cert` does not carry the name a `tls_client_auth` client is registered with, or null when it does. */
function certificateNameMismatch(name: TlsClientAuthName, cert: ClientCertificate): string | null {
  switch (name.kind) {
    case 'subject_dn':
      return cert.subjectCanonical === name.canonical ? null : 'subject DN differs'
    case 'san_dns':
      return cert.san.dns.some((d) => d.toLowerCase() === name.value) ? null : 'no matching dNSName'
    case 'san_uri':
      return cert.san.uri.includes(name.value) ? null : 'no matching URI'
    case 'san_ip':
      return cert.san.ip.includes(name.value) ? null : 'no matching iPAddress'
    case 'san_email':
      return cert.san.email.includes(name.value) ? null : 'no matching rfc822Name'
  }
}

/**
 * The mTLS client `client` when the request's certificate authenticates it
 * (RFC 8705 2.1.2, 2.2). A certificate from another CA that carries the
 * registered name is not verified, so it never reaches the name check; a
 * self-signed certificate counts only by its key.
 */
function certificateClient(req: IncomingMessage, as: AsContext, client: ClientConfig): ClientConfig {
  if (client.tokenEndpointAuthMethod === 'tls_client_auth') {
    const cert = as.clientCertificates.verified(req)
    if (cert === null) throw new InvalidClientCertificate('tls_client_auth without a verified client certificate')
    const name = client.tlsClientAuth
    const mismatch = name === undefined ? 'no registered name' : certificateNameMismatch(name, cert)
    if (mismatch !== null) throw new InvalidClientCertificate(`tls_client_auth: ${mismatch}`)
    return client
  }
  const cert = as.clientCertificates.presented(req)
  if (cert === null) throw new InvalidClientCertificate('self_signed_tls_client_auth without a client certificate')
  if (!as.clientKeys.certificateKeys(client).some((key) => key.equals(cert.publicKey))) {
    throw new InvalidClientCertificate('self_signed_tls_client_auth: the certificate key is not in the client jwks')
  }
  return client
}

/** A certificate that does not authenticate its client counts as a wrong secret does, and is refused while the address is locked. */
async function certificateCounted(limit: FailureLimit, check: () => ClientConfig): Promise<ClientConfig> {
  const lockedFor = await limit.lockedFor()
  if (lockedFor > 0) throw new ClientAuthenticationLocked(lockedFor)
  try {
    return check()
  } catch (err) {
    if (err instanceof InvalidClientCertificate) await limit.fail()
    throw err
  }
}

/** The URL of the endpoint called (an assertion may name it as its `aud`): the issuer's origin and the request's path. */
function endpointUrl(as: AsContext, req: IncomingMessage): string {
  const path = (req.url ?? '/').split('?')[0] ?? '/'
  return `${new URL(as.issuer).origin}${path}`
}

/**
 * Authenticate the client of a back-channel request.
 *
 * An unknown client id still costs one secret verification (against
 * {@link DUMMY_HASH}) so timing does not reveal which ids exist. Failed
 * secrets count per (client id, address) and per address (see
 * {@link clientAuthLimit}); past `rate_limit.client_auth_max_failures` or
 * `client_auth_address_max_failures` in the window, that address gets 429
 * `invalid_client` with Retry-After, without a verification. The count is
 * never per client id alone: ids are public, and the real client, from its
 * own address, must not pay for a stranger's wrong secrets. A refused
 * client assertion counts the same way, under the client it names (a
 * workload token: the client its `sub` maps to), and is refused alike
 * while its address is locked.
 *
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-2.3
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-3.2.1
 */
export async function authenticateClient(req: IncomingMessage, form: FormParams, as: AsContext, options: ClientAuthOptions = {}): Promise<AuthenticatedClient> {
  const p = presented(req, form, as)
  if (p.method === 'workload') {
    const limit = clientAuthLimit(as, as.clientAddress.of(req), workloadName(as, p.assertion))
    return { client: await counted(limit, () => workloadClient(as, p.assertion, p.bodyClientId)), method: 'private_key_jwt' }
  }
  if (p.method === 'private_key_jwt') {
    const limit = clientAuthLimit(as, as.clientAddress.of(req), p.clientId)
    return { client: await counted(limit, () => keyedClient(as, p.clientId, p.assertion, endpointUrl(as, req))), method: 'private_key_jwt' }
  }
  const client = await as.findClient(p.clientId)

  if (p.secret === null) {
    if (client === undefined) throw new InvalidClient(undefined, { cause: 'unknown client' })
    const method = client.tokenEndpointAuthMethod
    if (method === 'tls_client_auth' || method === 'self_signed_tls_client_auth') {
      const limit = clientAuthLimit(as, as.clientAddress.of(req), p.clientId)
      return { client: await certificateCounted(limit, () => certificateClient(req, as, client)), method }
    }
    if (method !== 'none' || options.confidentialOnly) {
      throw new InvalidClient(undefined, { cause: 'client must authenticate with a secret' })
    }
    return { client, method: 'none' }
  }

  if (client !== undefined && client.type === 'public') {
    throw new InvalidClient('Public clients do not use a client secret', { cause: 'public client sent a secret' })
  }
  if (client !== undefined && p.method === 'client_secret_post' && client.tokenEndpointAuthMethod !== 'client_secret_post') {
    throw new InvalidClient('This client is not registered for client_secret_post', { cause: 'client_secret_post not allowed' })
  }

  const limit = clientAuthLimit(as, as.clientAddress.of(req), p.clientId)
  const lockedFor = await limit.lockedFor()
  if (lockedFor > 0) {
    throw new ClientAuthenticationLocked(lockedFor)
  }
  const ok = (await as.secrets.verify(p.secret, client?.secretHash ?? DUMMY_HASH)) || (await previousSecretMatches(as, p.secret, client))
  if (!ok || client === undefined || client.secretHash === null) {
    await limit.fail()
    throw new InvalidClient(undefined, { cause: client === undefined ? 'unknown client' : 'wrong client secret' })
  }
  return { client, method: p.method }
}

/** After a rotation through the admin API, the previous secret until its `previous_expires_at`. */
async function previousSecretMatches(as: AsContext, secret: string, client: ClientConfig | undefined): Promise<boolean> {
  const previous = client?.previousSecret
  if (previous === undefined || epochSeconds(as.clock) >= previous.expiresAt) return false
  return as.secrets.verify(secret, previous.hash)
}
