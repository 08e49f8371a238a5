/**
 * The device side of RFC 8628, as a command-line tool runs it against a
 * server's issuer URL: start, poll once, and poll until decided at the
 * interval the server asks for. Shared by the e2e and browser device tests.
 */
import type { DeviceAuthorizationResponse } from '../../src/as/device-authorization.js'
import { postForm } from './http.js'

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

/** The device authorization response (RFC 8628 3.2), as the server declares it. */
export type DeviceStart = DeviceAuthorizationResponse

/** An answer of the token endpoint, read to the end. */
export interface PollAnswer {
  status: number
  headers: Headers
  body: Record<string, unknown>
}

/** POST /device_authorization as the public client `cli` (RFC 8628 3.1). */
export async function startDevice(issuer: string, scope = 'openid orders:read', clientId = 'cli'): Promise<DeviceStart> {
  const res = await postForm(`${issuer}/device_authorization`, { client_id: clientId, scope })
  if (res.status !== 200) throw new Error(`device_authorization answered ${res.status}: ${await res.text()}`)
  return (await res.json()) as DeviceStart
}

/** One token request with the device code (RFC 8628 3.4). */
export async function pollOnce(issuer: string, start: DeviceStart, clientId = 'cli'): Promise<PollAnswer> {
  const res = await postForm(`${issuer}/token`, { grant_type: DEVICE_GRANT, device_code: start.device_code, client_id: clientId })
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, unknown> }
}

/**
 * Poll as RFC 8628 3.5 tells a device to: wait `interval` seconds before each
 * request, 5 more after each slow_down, until the answer is no longer
 * authorization_pending. The waits are the protocol's, not the test's: the
 * server's clock runs in another process.
 */
export async function pollUntilDecided(issuer: string, start: DeviceStart, clientId = 'cli'): Promise<PollAnswer> {
  let interval = start.interval
  for (;;) {
    await new Promise((r) => setTimeout(r, interval * 1000))
    const answer = await pollOnce(issuer, start, clientId)
    if (answer.body.error === 'slow_down') interval += 5
    else if (answer.body.error !== 'authorization_pending') return answer
  }
}
