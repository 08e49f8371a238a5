/**
 * `binding_message` (OpenID CIBA Core 1.0 7.1): a short text shown both on the client's device and
 * on bearward's approval page, so the person can tell that the request they approve is the one in
 * front of them. It reaches people, so it passes the rule every client text does (no controls, line
 * separators, bidirectional controls, zero-width characters: a message must read as what it is);
 * markup is not refused here but always shown escaped.
 */
import { clientTextProblem } from '../../config/client-values.js'
import { InvalidBindingMessage } from '../../errors.js'

/** The longest binding message, in characters (code points): CIBA 7.1 asks for one short enough to show on a small screen. */
export const MAX_BINDING_MESSAGE = 64

/**
 * The binding message to show, or null when none was sent; `invalid_binding_message` when it is
 * empty, too long or not plain printable text.
 * @see https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html#rfc.section.7.1
 */
export function readBindingMessage(value: string | undefined): string | null {
  if (value === undefined) return null
  if (value.trim() === '') throw new InvalidBindingMessage('The binding message is empty')
  if ([...value].length > MAX_BINDING_MESSAGE) throw new InvalidBindingMessage(`The binding message is longer than ${MAX_BINDING_MESSAGE} characters`)
  const problem = clientTextProblem(value)
  if (problem !== undefined)
    throw new InvalidBindingMessage('The binding message must be printable text without control or bidirectional characters', { cause: problem })
  return value
}
