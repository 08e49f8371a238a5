/**
 * grant_type=urn:ietf:params:oauth:grant-type:device_code (RFC 8628 3.4, 3.5).
 *
 * Device codes are stored under a hash of the client id together with the
 * code, so another client presenting a device code finds nothing: it gets
 * invalid_grant and its poll changes no state (no slow_down clock, no
 * consumption of an approved code).
 *
 * The store folds "expired" into "missing" (it forgets a device record at
 * its expiry), but RFC 8628 3.5 wants `expired_token` then. So a device code
 * carries its own expiry in the clear: `<32 random bytes base64url>.<exp>`.
 * Tampering with the suffix only changes which error an unknown code gets.
 */
import { epochSeconds } from '../../clock.js'
import { AccessDenied, AuthorizationPending, ExpiredToken, InvalidGrant, SlowDown } from '../../errors.js'
import { hashToken } from '../../store/hash.js'
import { startGrant } from '../issue.js'
import { randomId, randomToken } from '../../crypto/random.js'
import { audienceFor, requestedResource } from '../resource.js'
import type { Grant, GrantRequest, TokenResponse } from './grant-handler.js'
import { strengthOf } from '../sign-in-strength.js'

/** RFC 8628 3.4 grant type URN. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

/** A new device code for a record expiring at `expiresAt` (epoch seconds). */
export function newDeviceCode(expiresAt: number): string {
  return `${randomToken()}.${expiresAt}`
}

/** The store key of a device code: only this client's polls find it. */
export function deviceCodeHash(clientId: string, deviceCode: string): string {
  return hashToken(`${clientId}\u0000${deviceCode}`)
}

/** The expiry a device code carries, or null when it is not one of ours. */
export function deviceCodeExpiry(deviceCode: string): number | null {
  const m = /^[A-Za-z0-9_-]{43}\.(\d{1,12})$/.exec(deviceCode)
  return m?.[1] === undefined ? null : Number(m[1])
}

export const deviceCodeGrant: Grant = {
  params: ['device_code', 'resource'],

  async handle({ form, client, as, dpop, mtls }: GrantRequest): Promise<TokenResponse> {
    const deviceCode = form.require('device_code')
    const resource = requestedResource(form, as)
    const poll = await as.store.devices.poll(deviceCodeHash(client.clientId, deviceCode), as.clock.now())
    const now = epochSeconds(as.clock)
    switch (poll.status) {
      case 'missing': {
        const exp = deviceCodeExpiry(deviceCode)
        if (exp !== null && now >= exp) throw new ExpiredToken()
        throw new InvalidGrant(undefined, { cause: 'device code unknown, consumed, or issued to another client' })
      }
      case 'slow_down':
        throw new SlowDown()
      case 'pending':
        throw new AuthorizationPending()
      case 'denied':
        throw new AccessDenied()
      case 'approved':
        break
    }
    const record = poll.record
    if (record.sub === null || record.clientId !== client.clientId) {
      throw new InvalidGrant(undefined, { cause: 'approved device record without a user' })
    }
    const audience = audienceFor(as, resource, null)
    return startGrant(as, {
      grant: 'device_code',
      client,
      grantId: randomId(),
      sub: record.sub,
      scope: record.scope,
      authTime: record.authTime ?? now,
      strength: strengthOf(record),
      resource,
      audience,
      nonce: null,
      jkt: dpop?.jkt ?? null,
      x5t: mtls?.x5t ?? null,
      // A withdrawal after the approval refuses the grant (a record stored by an older version: its login time).
      authorizedAtMs: record.decidedAtMs ?? (record.authTime ?? now) * 1000,
    })
  },
}
