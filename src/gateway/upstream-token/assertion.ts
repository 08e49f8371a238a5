import type { Clock } from '../../clock.js'
import { InvalidToken } from '../../errors.js'
import { randomId } from '../../crypto/random.js'
import type { TokenIdentity } from '../token-identity.js'
import { cappedExp, narrowedScope } from './scopes.js'
import type { PreparedSigner } from './signer.js'

/**
 * `upstream_token: assertion`: a signed identity assertion in a header of
 * its own (`upstream_assertion.header`), like the JWT assertion headers
 * identity-aware proxies send, so the upstream need not trust a plain
 * `X-Auth-Subject` any process on its network could write. It is bound to
 * one request: `aud` the upstream, `htm` and `htu` the method and URL the
 * upstream receives (named as in a DPoP proof, RFC 9449 4.2: the URL
 * without query or fragment), `jti` unique per request, `exp` seconds away.
 * An upstream that keeps the `jti`s it saw until their `exp` refuses any
 * replay; one that checks `htm`/`htu` refuses it for another request.
 *
 * Its `typ` is its own (RFC 8725 3.11), never `at+jwt`: an assertion is not
 * an access token, and bearward's own token checks refuse it as one.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7519#section-4.1
 */

/** The `typ` of an assertion's header. */
export const ASSERTION_TYP = 'bearward-assertion+jwt'

export interface AssertionOptions {
  signer: PreparedSigner
  clock: Clock
  issuer: string
  audience: string
  /** The upstream's origin: `htu` is it plus the path the upstream receives. */
  origin: string
  scopes: readonly string[]
  lifetimeSec: number
}

export class AssertionSigner {
  readonly #o: AssertionOptions
  readonly #allowed: ReadonlySet<string>

  constructor(o: AssertionOptions) {
    this.#o = o
    this.#allowed = new Set(o.scopes)
  }

  /** A new assertion for one request: `method` and `path` (with the upstream's base path, without the query) as the upstream receives them. */
  value(identity: TokenIdentity, method: string, path: string): Promise<string> {
    const sub = identity.sub ?? identity.clientId
    if (sub === null)
      return Promise.reject(new InvalidToken('The access token names no subject to assert', { cause: 'upstream assertion: no sub or client_id' }))
    const iat = Math.floor(this.#o.clock.now() / 1000)
    return this.#o.signer.sign({
      iss: this.#o.issuer,
      sub,
      aud: this.#o.audience,
      exp: cappedExp(iat, this.#o.lifetimeSec, identity.exp),
      iat,
      jti: randomId(),
      client_id: identity.clientId ?? sub,
      scope: narrowedScope(identity.scopes, this.#allowed),
      htm: method,
      htu: this.#o.origin + path,
    })
  }
}
