/**
 * POST /par: pushed authorization requests (RFC 9126).
 *
 * The client authenticates as at /token (client-auth.ts: every method added
 * there applies here), and sends the parameters of an authorization request,
 * or a `request` object (RFC 9101, request-object.ts) whose claims are then
 * the only parameters read (RFC 9126 3). Every check /authorize runs is run
 * now, against the authenticated client, and its failure is a JSON error to
 * the client (RFC 9126 2.3), never a redirect. The request is kept in the
 * store, bound to the client, for `par.request_uri_ttl`; the answer is
 * 201 `{ request_uri, expires_in }`, and /authorize takes that `request_uri`
 * once (held-request.ts).
 *
 * A DPoP proof sent here (RFC 9449 10.1) binds the code to its key, as
 * `dpop_jkt` would; both at once must name the same key.
 *
 * @see https://www.rfc-editor.org/rfc/rfc9126#section-2
 * @see https://www.rfc-editor.org/rfc/rfc9449#section-10.1
 */
import { InvalidRequest, MethodNotAllowed } from '../errors.js'
import { proofHeader } from '../dpop/verify-proof.js'
import { FormParams, readForm } from '../http/body.js'
import { NO_STORE, sendJson } from '../http/reply.js'
import { authenticateClient, CLIENT_AUTH_PARAMS } from './client-auth.js'
import type { AsHandler } from './context.js'
import { validateAuthorizationParams } from './interaction/authorization-request.js'
import { pushRequest } from './interaction/held-request.js'
import { verifyRequestObject } from './request-object.js'

/** Parameters that authenticate the client: read by client-auth.ts, never part of the pushed request. */
const AUTHENTICATION_ONLY: ReadonlySet<string> = new Set(CLIENT_AUTH_PARAMS)

/** The authorization request's parameters as the form sent them, the client named by its authentication. */
function pushedParams(form: FormParams, clientId: string): Array<[string, string]> {
  const params: Array<[string, string]> = [['client_id', clientId]]
  for (const name of form.names()) {
    if (AUTHENTICATION_ONLY.has(name)) continue
    for (const value of form.getAll(name)) params.push([name, value])
  }
  return params
}

/**
 * The pushed authorization request endpoint. Answers carry
 * `Cache-Control: no-store`, success and failure alike.
 * @see https://www.rfc-editor.org/rfc/rfc9126#section-2.1
 */
export const handlePushedAuthorizationRequest: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') throw new MethodNotAllowed(['POST'])
  const form = await readForm(req)
  form.assertNoRepeats(CLIENT_AUTH_PARAMS)
  const proof = proofHeader(req, 'token')
  const { client } = await authenticateClient(req, form, as)
  ctx.clientId = client.clientId
  // RFC 9126 2.1: a request_uri cannot itself be pushed.
  if (form.has('request_uri')) throw new InvalidRequest('request_uri cannot be pushed')

  const requestObject = form.get('request')
  let params: Array<[string, string]>
  if (requestObject !== undefined) params = await verifyRequestObject(as, client, requestObject)
  else if (client.requireSignedRequestObject === true) throw new InvalidRequest('This client must send its authorization requests as signed request objects')
  else params = pushedParams(form, client.clientId)

  if (proof !== null) {
    const { jkt } = await as.dpop.token.verify(proof, { method: 'POST', url: `${as.issuer}/par` })
    const named = params.filter(([name]) => name === 'dpop_jkt')
    if (named.length > 0 && (named.length > 1 || named[0]?.[1] !== jkt)) throw new InvalidRequest('dpop_jkt does not name the key of the DPoP proof')
    if (named.length === 0) params.push(['dpop_jkt', jkt])
  }

  const text = new URLSearchParams(params).toString()
  const parsed = validateAuthorizationParams(FormParams.parse(text), client, text, as, null)
  if (parsed.kind !== 'ok') throw parsed.error
  const { requestUri, expiresIn } = await pushRequest(as, client.clientId, text, requestObject !== undefined)
  sendJson(res, 201, { request_uri: requestUri, expires_in: expiresIn }, NO_STORE)
}
