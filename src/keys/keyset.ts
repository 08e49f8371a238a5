import { createPrivateKey, createPublicKey, type KeyObject, type JsonWebKey } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose'
import type { KeySource } from '../config/validated-config.js'

/** Signing algorithms the authorization server can use, by key type. */
export const SUPPORTED_ALGS = ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'] as const
export type SigningAlg = (typeof SUPPORTED_ALGS)[number]

export interface SigningKey {
  kid: string
  alg: SigningAlg
  privateKey: KeyObject
  publicKey: KeyObject
  /** Public members only, with kid, alg and use=sig. */
  publicJwk: JWK
}

/**
 * The authorization server's keys: the first signs, all verify and are
 * published (RFC 7517), so adding a key and reloading rotates without
 * failing tokens signed by the old one.
 */
export class KeySet {
  readonly signing: SigningKey
  /**
   * Signs ID tokens: the first RS256 key when there is one, since OpenID
   * Connect clients that do not read discovery expect RS256 (OIDC Core 15.1,
   * Discovery 3); otherwise the signing key.
   */
  readonly idToken: SigningKey
  readonly all: readonly SigningKey[]
  readonly #byKid: Map<string, SigningKey>
  /** The JWKS document, built once. */
  readonly jwks: { keys: JWK[] }
  /** True when no key was configured and an in-memory key is in use. */
  readonly ephemeral: boolean

  constructor(keys: readonly SigningKey[], ephemeral: boolean) {
    const first = keys[0]
    if (first === undefined) throw new Error('a key set needs at least one key')
    this.signing = first
    this.idToken = keys.find((k) => k.alg === 'RS256') ?? first
    this.all = keys
    this.#byKid = new Map(keys.map((k) => [k.kid, k]))
    this.jwks = Object.freeze({ keys: keys.map((k) => Object.freeze({ ...k.publicJwk })) })
    this.ephemeral = ephemeral
  }

  /** Look a key up by kid; the kid is only ever a map key, never a path or query. */
  find(kid: string): SigningKey | undefined {
    return this.#byKid.get(kid)
  }

  /** Algorithms of the published keys (for metadata and the verifier's allow-list). */
  algorithms(): SigningAlg[] {
    return [...new Set(this.all.map((k) => k.alg))]
  }
}

const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'] as const

/** Public part of a JWK; never carries a private member. */
export function publicMembers(jwk: JWK): JWK {
  const out: JWK = { ...jwk }
  for (const m of PRIVATE_MEMBERS) delete (out as Record<string, unknown>)[m]
  return out
}

function algFor(jwk: JWK): SigningAlg {
  if (jwk.alg !== undefined) {
    if (!(SUPPORTED_ALGS as readonly string[]).includes(jwk.alg)) {
      throw new Error(`unsupported alg ${jwk.alg}; use one of ${SUPPORTED_ALGS.join(', ')}`)
    }
    return jwk.alg as SigningAlg
  }
  if (jwk.kty === 'RSA') return 'RS256'
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return 'ES256'
  if (jwk.kty === 'EC' && jwk.crv === 'P-384') return 'ES384'
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return 'EdDSA'
  throw new Error(`cannot sign with key type ${String(jwk.kty)}${jwk.crv ? ` (${jwk.crv})` : ''}`)
}

function checkAlgMatchesKey(alg: SigningAlg, jwk: JWK): void {
  const ok =
    ((alg === 'RS256' || alg === 'PS256') && jwk.kty === 'RSA') ||
    (alg === 'ES256' && jwk.kty === 'EC' && jwk.crv === 'P-256') ||
    (alg === 'ES384' && jwk.kty === 'EC' && jwk.crv === 'P-384') ||
    (alg === 'EdDSA' && jwk.kty === 'OKP' && jwk.crv === 'Ed25519')
  if (!ok) throw new Error(`alg ${alg} does not fit a ${String(jwk.kty)} key`)
}

/** Turn one private JWK into a signing key. Throws with a reason a person can act on. */
export async function signingKeyFromJwk(jwk: JWK): Promise<SigningKey> {
  if (typeof jwk.d !== 'string') throw new Error('the JWK has no private part ("d")')
  if (jwk.kty === 'oct') throw new Error('symmetric keys cannot sign access tokens here; use an asymmetric key')
  const alg = algFor(jwk)
  checkAlgMatchesKey(alg, jwk)
  const privateKey = createPrivateKey({ key: jwk as JsonWebKey, format: 'jwk' })
  const publicKey = createPublicKey(privateKey)
  const pub = publicMembers(await exportJWK(publicKey))
  const kid = jwk.kid ?? (await calculateJwkThumbprint(pub))
  return { kid, alg, privateKey, publicKey, publicJwk: { ...pub, kid, alg, use: 'sig' } }
}

/** Generate a private JWK (for `bearward keys generate` and the ephemeral key). */
export async function generatePrivateJwk(alg: SigningAlg = 'RS256', kid?: string): Promise<JWK> {
  const { privateKey } = await generateKeyPair(alg, { extractable: true, ...(alg === 'RS256' || alg === 'PS256' ? { modulusLength: 2048 } : {}) })
  const jwk = await exportJWK(privateKey)
  const pub = publicMembers(jwk)
  return { ...jwk, kid: kid ?? (await calculateJwkThumbprint(pub)), alg, use: 'sig' }
}

/**
 * Load the configured keys. With none configured, `ephemeral` (kept by the
 * process across reloads) is used, so a reload does not invalidate tokens.
 */
export async function loadKeySet(sources: readonly KeySource[], ephemeral: () => Promise<SigningKey>): Promise<KeySet> {
  if (sources.length === 0) return new KeySet([await ephemeral()], true)
  const keys: SigningKey[] = []
  for (const [i, source] of sources.entries()) {
    let jwk: JWK
    const where = 'file' in source ? source.file : `keys[${i}].jwk`
    try {
      if ('file' in source) jwk = JSON.parse(await readFile(source.file, 'utf8')) as JWK
      else jwk = source.jwk as JWK
      keys.push(await signingKeyFromJwk(jwk))
    } catch (err) {
      throw new Error(`authorization_server.keys[${i}] (${where}): ${(err as Error).message}`)
    }
  }
  const kids = new Set<string>()
  for (const k of keys) {
    if (kids.has(k.kid)) throw new Error(`authorization_server.keys: duplicate kid ${k.kid}`)
    kids.add(k.kid)
  }
  return new KeySet(keys, false)
}
