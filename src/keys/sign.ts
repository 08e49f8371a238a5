import { constants, sign } from 'node:crypto'
import type { SigningKey } from './keyset.js'

/**
 * JWS compact serialization (RFC 7515 7.1) signed with node:crypto. The
 * authorization server signs on every token it issues; jose's WebCrypto
 * path costs several times a direct `crypto.sign` there. Verification stays
 * with jose (gateway, tests), which checks everything this produces.
 */

const encoder = (value: unknown): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')

/** How each algorithm signs (RFC 7518 3.3-3.5, RFC 8037 3.1). */
function signature(key: SigningKey, input: Buffer): Buffer {
  switch (key.alg) {
    case 'RS256':
      return sign('sha256', input, key.privateKey)
    case 'PS256':
      return sign('sha256', input, { key: key.privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 })
    case 'ES256':
      // JWS uses the raw r||s form, not DER (RFC 7518 3.4).
      return sign('sha256', input, { key: key.privateKey, dsaEncoding: 'ieee-p1363' })
    case 'ES384':
      return sign('sha384', input, { key: key.privateKey, dsaEncoding: 'ieee-p1363' })
    case 'EdDSA':
      return sign(null, input, key.privateKey)
  }
}

/** Sign `payload` with `key`; the header gets alg and kid from the key, plus `typ`. */
export function signJwt(key: SigningKey, typ: string, payload: Readonly<Record<string, unknown>>): string {
  const signingInput = `${encoder({ alg: key.alg, kid: key.kid, typ })}.${encoder(payload)}`
  return `${signingInput}.${signature(key, Buffer.from(signingInput, 'ascii')).toString('base64url')}`
}
