/**
 * `dpop`: DPoP proof checks (RFC 9449), one setting for both faces: the
 * token endpoint and UserInfo of the authorization server, and the
 * gateway's routes.
 */
import type { Node } from 'yaml'
import { PROOF_ALGORITHMS, type ProofAlgorithm } from '../../dpop/jws.js'
import type { DpopConfig } from '../validated-config.js'
import type { Reader } from '../reader.js'
import { enumAt, keysAt } from '../contract.js'

export const DPOP_KEYS = keysAt('#/properties/dpop')
/** Proof algorithms a config may list: the schema's, each one the verifier handles. */
export const DPOP_ALGS = enumAt<ProofAlgorithm>('#/properties/dpop/properties/algs', PROOF_ALGORITHMS)
export const DPOP_NONCE_KEYS = keysAt('#/properties/dpop/properties/nonce')

/** What most clients sign with (oauth4webapi, browsers' WebCrypto): the default allow-list. */
export const DEFAULT_DPOP_ALGS: readonly ProofAlgorithm[] = ['ES256', 'ES384', 'EdDSA', 'Ed25519', 'RS256', 'PS256']

export const DEFAULT_DPOP: DpopConfig = {
  algs: [...DEFAULT_DPOP_ALGS],
  iatWindowSec: 60,
  iatLeewaySec: 5,
  nonce: null,
}

const REFUSED_ALGS: Readonly<Record<string, string>> = {
  none: 'a DPoP proof must be signed: `none` is never accepted (RFC 9449 4.2)',
  HS256: 'a DPoP proof needs an asymmetric algorithm: HMAC is never accepted (RFC 9449 4.2)',
  HS384: 'a DPoP proof needs an asymmetric algorithm: HMAC is never accepted (RFC 9449 4.2)',
  HS512: 'a DPoP proof needs an asymmetric algorithm: HMAC is never accepted (RFC 9449 4.2)',
}

/** A nonce secret shorter than this could be guessed offline from the nonces handed out. */
const MIN_SECRET_LENGTH = 32

export function readDpop(r: Reader, node: Node | undefined, path: string): DpopConfig {
  if (node === undefined) return DEFAULT_DPOP
  const m = r.map(node, path, DPOP_KEYS)
  if (m === undefined) return DEFAULT_DPOP
  const algs = [
    ...new Set(
      m.opt('algs', r.list(r.oneOf(DPOP_ALGS, { refused: REFUSED_ALGS, what: 'a DPoP proof algorithm' }), { nonEmpty: true }), [...DEFAULT_DPOP_ALGS]),
    ),
  ]
  const iatWindowSec = m.opt('iat_window', r.seconds({ min: 1, max: 600 }), DEFAULT_DPOP.iatWindowSec)
  const iatLeewaySec = m.opt('iat_leeway', r.seconds({ min: 0, max: 60 }), DEFAULT_DPOP.iatLeewaySec)
  let nonce: DpopConfig['nonce'] = null
  if (m.has('nonce') && !m.isNull('nonce')) {
    const n = r.map(m.get('nonce'), m.pathOf('nonce'), DPOP_NONCE_KEYS)
    const secret = n?.req(
      'secret',
      r.str({
        check: (v) =>
          v.length >= MIN_SECRET_LENGTH
            ? undefined
            : `the nonce secret needs at least ${MIN_SECRET_LENGTH} characters; create one with \`openssl rand -base64 32\``,
      }),
    )
    const ttlSec = n?.opt('ttl', r.seconds({ min: 10, max: 3600 }), 300) ?? 300
    if (secret !== undefined) nonce = { secret, ttlSec }
  }
  return { algs, iatWindowSec, iatLeewaySec, nonce }
}
