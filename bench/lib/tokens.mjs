// Signing key and JWT access tokens for the gateway scenarios: exactly what
// the built-in AS issues (RFC 9068: typ at+jwt, ES256, iss = aud = public_url,
// client_id, scope, jti), signed with the same private JWK the config uses.
// Signed with node:crypto directly because 100,000+ tokens must be minted
// before a run; one is checked with jose so the format is not our own guess.
import { createPrivateKey, createPublicKey, randomBytes, sign } from 'node:crypto'
import { appendFileSync, writeFileSync } from 'node:fs'
import { exportJWK, generateKeyPair, jwtVerify } from 'jose'

/** A fresh ES256 private JWK with kid, alg and use. */
export async function generateSigningJwk(kid = 'bench-es256') {
  const { privateKey } = await generateKeyPair('ES256', { extractable: true })
  return { ...(await exportJWK(privateKey)), kid, alg: 'ES256', use: 'sig' }
}

/** Public members of an EC JWK. */
export function publicJwk(jwk) {
  const { d: _d, ...pub } = jwk
  return pub
}

const b64 = (obj) => Buffer.from(JSON.stringify(obj)).toString('base64url')

/**
 * `count` distinct access tokens. Each has its own jti and sub
 * (`user-<n>`); exp is `ttlSec` from now.
 */
export function mintJwts({ privateJwk, issuer, audience, scope, clientId = 'bench-client', count, ttlSec = 3600, subPrefix = 'user-', extra = () => ({}) }) {
  const key = createPrivateKey({ key: privateJwk, format: 'jwk' })
  const header = b64({ alg: 'ES256', kid: privateJwk.kid, typ: 'at+jwt' })
  const iat = Math.floor(Date.now() / 1000)
  const prefix = randomBytes(6).toString('base64url')
  const out = new Array(count)
  for (let i = 0; i < count; i++) {
    const payload = b64({
      ...extra(i),
      iss: issuer,
      sub: `${subPrefix}${i}`,
      aud: audience,
      exp: iat + ttlSec,
      iat,
      jti: `${prefix}-${i}`,
      client_id: clientId,
      scope,
    })
    const input = `${header}.${payload}`
    const sig = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')
    out[i] = `${input}.${sig}`
  }
  return out
}

/** Throws unless jose accepts `token` as bearward's gateway is configured to. */
export async function checkWithJose(token, privateJwk, issuer, audience) {
  const key = createPublicKey({ key: publicJwk(privateJwk), format: 'jwk' })
  await jwtVerify(token, key, { issuer, audience, typ: 'at+jwt', algorithms: ['ES256'], requiredClaims: ['exp', 'jti'] })
}

export function writeLines(file, values) {
  writeFileSync(file, values.join('\n') + '\n')
  return file
}

/** Mint `count` tokens into `file` in chunks (single-use pools can be large). */
export function mintJwtsToFile(file, { count, chunk = 10_000, ...claims }) {
  writeFileSync(file, '')
  for (let done = 0; done < count; done += chunk) {
    const n = Math.min(chunk, count - done)
    appendFileSync(file, mintJwts({ ...claims, count: n, subPrefix: `u${done}-` }).join('\n') + '\n')
  }
  return file
}
