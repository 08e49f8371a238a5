/**
 * POST /device_authorization (RFC 8628 3.1, 3.2): a device with poor input
 * gets a device code to poll /token with, and a short user code the user
 * types at `{issuer}/device` on another screen.
 */
import { epochSeconds } from '../clock.js'
import { InvalidRequest, MethodNotAllowed, ServerError, UnauthorizedClient } from '../errors.js'
import { readForm } from '../http/body.js'
import { NO_STORE, sendJson } from '../http/reply.js'
import { authenticateClient, CLIENT_AUTH_PARAMS } from './client-auth.js'
import type { AsHandler } from './context.js'
import { DEVICE_CODE_GRANT, deviceCodeHash, newDeviceCode } from './grants/device-code.js'
import { formatScope, requestedClientScope } from './scope.js'
import { formatUserCode, newUserCode } from '../tokens/user-code.js'

/** Attempts at an unused user code before giving up (a collision is rare: 2^-34 per live code). */
const USER_CODE_ATTEMPTS = 5

/** RFC 8628 3.2 device authorization response. */
export interface DeviceAuthorizationResponse {
  device_code: string
  user_code: string
  verification_uri: string
  verification_uri_complete: string
  expires_in: number
  interval: number
}

/** @see https://www.rfc-editor.org/rfc/rfc8628#section-3.1 */
export const handleDeviceAuthorization: AsHandler = async (req, res, ctx, as) => {
  if (req.method !== 'POST') throw new MethodNotAllowed(['POST'])
  const form = await readForm(req)
  form.assertNoRepeats(['scope', ...CLIENT_AUTH_PARAMS])
  const { client } = await authenticateClient(req, form, as)
  // The request's span names the client only once it is authenticated: a refused one could name anyone (docs/telemetry.md).
  ctx.clientId = client.clientId
  if (!client.grantTypes.includes(DEVICE_CODE_GRANT)) {
    throw new UnauthorizedClient('The client is not allowed to use the device authorization grant')
  }
  // RFC 9396 6: the device flow's consent shows no details, so a request with them is refused, never granted without them.
  if (form.has('authorization_details')) {
    throw new InvalidRequest('authorization_details is not supported in the device authorization flow', {
      cause: 'authorization_details at device authorization',
    })
  }
  const scope = formatScope(requestedClientScope(form.get('scope'), client))
  const { ttlSec, intervalSec } = as.as.device
  const expiresAt = epochSeconds(as.clock) + ttlSec
  const deviceCode = newDeviceCode(expiresAt)
  for (let attempt = 0; attempt < USER_CODE_ATTEMPTS; attempt++) {
    const userCode = newUserCode()
    const stored = await as.store.devices.put(deviceCodeHash(client.clientId, deviceCode), {
      clientId: client.clientId,
      userCode,
      scope,
      status: 'pending',
      sub: null,
      authTime: null,
      expiresAt,
      intervalSec,
      lastPollMs: 0,
    })
    if (!stored) continue
    const shown = formatUserCode(userCode)
    const verificationUri = `${as.issuer}/device`
    const body: DeviceAuthorizationResponse = {
      device_code: deviceCode,
      user_code: shown,
      verification_uri: verificationUri,
      verification_uri_complete: `${verificationUri}?user_code=${shown}`,
      expires_in: ttlSec,
      interval: intervalSec,
    }
    sendJson(res, 200, body, NO_STORE)
    return
  }
  throw new ServerError('Could not allocate a user code', { cause: 'user code collisions' })
}
