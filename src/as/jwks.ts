/**
 * GET /jwks.json (RFC 7517 5): the public keys that verify our tokens. Built
 * once per Runtime; private members are stripped again here so a key source
 * that kept them could never leak them.
 */
import { publicMembers } from '../keys/keyset.js'
import { MethodNotAllowed } from '../errors.js'
import type { AsContext, AsHandler } from './context.js'

/** Browsers and relying parties may cache the key set briefly; rotation keeps old keys published. */
export const DOCUMENT_CACHE_CONTROL = 'public, max-age=300'

/** The JWKS document: kid, alg, use and the public members of each key. */
export function jwksDocument(as: AsContext): { keys: Record<string, unknown>[] } {
  return { keys: as.keys.all.map((k) => ({ ...publicMembers(k.publicJwk), kid: k.kid, alg: k.alg, use: 'sig' })) }
}

/** A handler serving a fixed JSON document with GET or HEAD. */
export function staticJsonHandler(document: unknown): AsHandler {
  const payload = JSON.stringify(document)
  const length = Buffer.byteLength(payload)
  return async (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new MethodNotAllowed(['GET', 'HEAD'])
    res.statusCode = 200
    res.setHeader('content-type', 'application/json')
    res.setHeader('cache-control', DOCUMENT_CACHE_CONTROL)
    res.setHeader('content-length', length)
    res.end(req.method === 'HEAD' ? undefined : payload)
  }
}

/** @see https://www.rfc-editor.org/rfc/rfc7517#section-5 */
export function jwksHandler(as: AsContext): AsHandler {
  return staticJsonHandler(jwksDocument(as))
}
