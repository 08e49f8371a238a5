/**
 * How a test client authenticates to the token, revocation and introspection
 * endpoints with a secret: the one place that builds `Authorization: Basic`.
 */

/**
 * The application/x-www-form-urlencoded form of one value (space as `+`,
 * everything outside the unreserved set percent-encoded), as the Basic
 * credentials of a client carry it.
 * @see https://www.rfc-editor.org/rfc/rfc6749#appendix-B
 */
export function formEncode(value: string): string {
  return new URLSearchParams([['', value]]).toString().slice(1)
}

/**
 * `Authorization: Basic` for a client: client_id and secret each
 * form-urlencoded, joined by `:`, then base64. A test that means to send
 * credentials that are not encoded builds that header itself and says why.
 * @see https://www.rfc-editor.org/rfc/rfc6749#section-2.3.1
 */
export function basic(clientId: string, secret: string): string {
  return `Basic ${Buffer.from(`${formEncode(clientId)}:${formEncode(secret)}`).toString('base64')}`
}
