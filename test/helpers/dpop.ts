/**
 * Hand-made DPoP proofs for refusal tests: any header, any claims, signed
 * with node:crypto (the well-formed ones a client sends come from
 * oauth4webapi in the e2e tests). A key pair's thumbprint is computed here
 * independently of src/dpop/thumbprint.ts.
 */
import { constants, createHash, createHmac, generateKeyPairSync, randomBytes, sign, type JsonWebKey, type KeyObject } from 'node:crypto'

export interface ProofKeyPair {
  privateKey: KeyObject
  publicJwk: JsonWebKey
  alg: 'ES256' | 'EdDSA' | 'RS256' | 'PS256'
  /** RFC 7638 thumbprint, computed independently. */
  jkt: string
}

export function proofKeyPair(alg: ProofKeyPair['alg'] = 'ES256'): ProofKeyPair {
  const pair =
    alg === 'ES256'
      ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
      : alg === 'EdDSA'
        ? generateKeyPairSync('ed25519')
        : generateKeyPairSync('rsa', { modulusLength: 2048 })
  const publicJwk = pair.publicKey.export({ format: 'jwk' })
  const members =
    publicJwk.kty === 'EC'
      ? { crv: publicJwk.crv, kty: publicJwk.kty, x: publicJwk.x, y: publicJwk.y }
      : publicJwk.kty === 'OKP'
        ? { crv: publicJwk.crv, kty: publicJwk.kty, x: publicJwk.x }
        : { e: publicJwk.e, kty: publicJwk.kty, n: publicJwk.n }
  const jkt = createHash('sha256').update(JSON.stringify(members)).digest('base64url')
  return { privateKey: pair.privateKey, publicJwk, alg, jkt }
}

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')

/** base64url(SHA-256(token)): the `ath` claim. */
export function athOf(token: string): string {
  return createHash('sha256').update(token, 'ascii').digest('base64url')
}

export interface ProofOptions {
  htm?: string
  htu: string
  /** Epoch seconds (default now). */
  iat?: number
  jti?: string
  /** Access token to hash into `ath`. */
  accessToken?: string
  nonce?: string
  /** Replace or remove header members (undefined removes). */
  header?: Record<string, unknown>
  /** Replace or remove claims (undefined removes). */
  claims?: Record<string, unknown>
  /** Sign as `none` (no signature) or with HMAC under this secret instead of the key pair. */
  forge?: { alg: 'none' } | { alg: 'HS256'; secret: string }
  nowMs?: number
}

function merge(base: Record<string, unknown>, over: Record<string, unknown> | undefined): Record<string, unknown> {
  const out = { ...base }
  for (const [k, v] of Object.entries(over ?? {})) {
    if (v === undefined) delete out[k]
    else out[k] = v
  }
  return out
}

/** A DPoP proof JWT for `o`, signed by `key`. */
export function makeProof(key: ProofKeyPair, o: ProofOptions): string {
  const header = merge({ typ: 'dpop+jwt', alg: o.forge?.alg ?? key.alg, jwk: key.publicJwk }, o.header)
  const base: Record<string, unknown> = {
    jti: o.jti ?? randomBytes(16).toString('base64url'),
    htm: o.htm ?? 'GET',
    htu: o.htu,
    iat: o.iat ?? Math.floor((o.nowMs ?? Date.now()) / 1000),
  }
  if (o.accessToken !== undefined) base.ath = athOf(o.accessToken)
  if (o.nonce !== undefined) base.nonce = o.nonce
  const input = `${b64(header)}.${b64(merge(base, o.claims))}`
  if (o.forge?.alg === 'none') return `${input}.`
  if (o.forge?.alg === 'HS256') return `${input}.${createHmac('sha256', o.forge.secret).update(input).digest('base64url')}`
  const alg = header.alg
  const signature =
    key.alg === 'EdDSA'
      ? sign(null, Buffer.from(input), key.privateKey)
      : key.alg === 'ES256'
        ? sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' })
        : key.alg === 'PS256' || alg === 'PS256'
          ? sign('sha256', Buffer.from(input), { key: key.privateKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 })
          : sign('sha256', Buffer.from(input), key.privateKey)
  return `${input}.${signature.toString('base64url')}`
}
