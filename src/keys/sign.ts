import { constants, sign, type KeyObject, type SignKeyObjectInput } from 'node:crypto'
import type { SigningKey } from './keyset.js'

/**
 * JWS compact serialization (RFC 7515 7.1) signed with node:crypto. The
 * authorization server signs on every token it issues; jose's WebCrypto
 * path costs several times a direct `crypto.sign` there. Verification stays
 * with jose (gateway, tests), which checks everything this produces.
 */

const encoder = (value: unknown): string => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url')

/** What `crypto.sign` takes for each algorithm (RFC 7518 3.3-3.5, RFC 8037 3.1). */
export function signOptions(key: SigningKey): { digest: string | null; key: SignKeyObjectInput | KeyObject } {
  switch (key.alg) {
    case 'RS256':
      return { digest: 'sha256', key: key.privateKey }
    case 'PS256':
      return { digest: 'sha256', key: { key: key.privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 } }
    case 'ES256':
      // JWS uses the raw r||s form, not DER (RFC 7518 3.4).
      return { digest: 'sha256', key: { key: key.privateKey, dsaEncoding: 'ieee-p1363' } }
    case 'ES384':
      return { digest: 'sha384', key: { key: key.privateKey, dsaEncoding: 'ieee-p1363' } }
    case 'EdDSA':
      return { digest: null, key: key.privateKey }
  }
}

/**
 * Sign `payload` with `key`; the header gets alg and kid from the key, plus
 * `typ`. The signature is computed on libuv's thread pool (crypto.sign with
 * a callback), not on the event loop, so the loop serves other requests
 * meanwhile (docs/performance.md, "Signatures are computed on libuv's
 * thread pool").
 */
export function signJwt(key: SigningKey, typ: string, payload: Readonly<Record<string, unknown>>): Promise<string> {
  const signingInput = `${encoder({ alg: key.alg, kid: key.kid, typ })}.${encoder(payload)}`
  const { digest, key: keyInput } = signOptions(key)
  return new Promise((resolve, reject) => {
    sign(digest, Buffer.from(signingInput, 'ascii'), keyInput, (err, signature) => {
      if (err) reject(err)
      else resolve(`${signingInput}.${signature.toString('base64url')}`)
    })
  })
}
