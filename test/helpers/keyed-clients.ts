/**
 * Clients that authenticate with their own keys (private_key_jwt, RFC 7523)
 * and sign request objects with them (RFC 9101): an ES256 key pair per
 * client, and the client's config lines for `clientsExtra`.
 */
import { exportJWK, generateKeyPair, type CryptoKey, type JWK } from 'jose'

/** RFC 7523 2.2: the `client_assertion_type` of a JWT client assertion. */
export const ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer'

export interface ClientKeyPair {
  /** What the client signs its assertions and request objects with. */
  privateKey: CryptoKey
  /** What its config lists in `jwks` (kid, alg ES256, use sig). */
  publicJwk: JWK
}

/** A fresh ES256 key pair named `kid`. */
export async function clientKeyPair(kid: string): Promise<ClientKeyPair> {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true })
  return { privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } }
}

/** A confidential private_key_jwt client's config lines (indented for `clientsExtra`), then `more` lines of its own. */
export function keyedClientLines(o: {
  clientId: string
  name?: string
  jwk: JWK
  redirectUri: string
  grantTypes: readonly string[]
  scopes: readonly string[]
  more?: readonly string[]
}): string[] {
  return [
    `    - client_id: ${o.clientId}`,
    ...(o.name === undefined ? [] : [`      name: ${o.name}`]),
    '      type: confidential',
    '      token_endpoint_auth_method: private_key_jwt',
    `      jwks: ${JSON.stringify({ keys: [o.jwk] })}`,
    `      redirect_uris: [${o.redirectUri}]`,
    `      grant_types: [${o.grantTypes.join(', ')}]`,
    `      scopes: [${o.scopes.join(', ')}]`,
    ...(o.more ?? []),
  ]
}
