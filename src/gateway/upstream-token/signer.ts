import { sign, type KeyObject, type SignKeyObjectInput } from 'node:crypto'
import type { SigningKey } from '../../keys/keyset.js'
import { signOptions } from '../../keys/sign.js'

/**
 * A JWS signer for one key and one `typ`, with everything that does not
 * change per token prepared once: the encoded protected header and the key
 * object with its signing options. The upstream token modes sign on the
 * request path (an assertion per request, an exchanged token per token and
 * minute), so only the payload is encoded and signed per call.
 *
 * The signature is computed on libuv's thread pool (`crypto.sign` with a
 * callback), as src/keys/sign.ts does for the authorization server, so the
 * event loop serves other requests while an RSA signature is computed
 * (docs/performance.md, "Signatures are computed on libuv's thread pool").
 *
 * @see https://www.rfc-editor.org/rfc/rfc7515#section-7.1
 */
export class PreparedSigner {
  /** `base64url(header) + '.'`: the start of every signing input. */
  readonly #head: string
  readonly #digest: string | null
  readonly #key: SignKeyObjectInput | KeyObject

  constructor(key: SigningKey, typ: string) {
    this.#head = `${Buffer.from(JSON.stringify({ alg: key.alg, kid: key.kid, typ }), 'utf8').toString('base64url')}.`
    const { digest, key: input } = signOptions(key)
    this.#digest = digest
    this.#key = input
  }

  /** The compact JWS of `payload`. */
  sign(payload: Readonly<Record<string, unknown>>): Promise<string> {
    const input = this.#head + Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url')
    return new Promise((resolve, reject) => {
      sign(this.#digest, Buffer.from(input, 'ascii'), this.#key, (err, signature) => {
        if (err) reject(err)
        else resolve(`${input}.${signature.toString('base64url')}`)
      })
    })
  }
}
