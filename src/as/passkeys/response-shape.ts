/**
 * The credential a page posts back (the JSON of a PublicKeyCredential), read
 * strictly: only the fields WebAuthn defines, each a base64url string of a
 * bounded size, anything else refused before the library sees it. A stranger
 * can post anything here.
 * @see https://www.w3.org/TR/webauthn-3/#dictdef-registrationresponsejson
 */
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server'

/** Big enough for any attestation we accept ('none'), far below the form limit. */
const MAX_FIELD = 16_384
const B64URL = /^[A-Za-z0-9_-]*$/
const TRANSPORTS: ReadonlySet<string> = new Set(['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb'])

type Json = Record<string, unknown>

function object(v: unknown): Json | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : null
}

function b64(v: unknown, optional = false): v is string {
  if (v === undefined && optional) return true
  return typeof v === 'string' && v.length > 0 && v.length <= MAX_FIELD && B64URL.test(v)
}

function parse(text: string | undefined): Json | null {
  if (text === undefined || text.length > 4 * MAX_FIELD) return null
  try {
    return object(JSON.parse(text))
  } catch {
    return null
  }
}

/** The outer fields every credential has; the id must be the raw id. */
function outer(c: Json): Json | null {
  if (c.type !== 'public-key' || !b64(c.id) || c.rawId !== c.id) return null
  return object(c.response)
}

/** The outer fields of a credential as the library takes them: the id twice, no extension results. */
function credentialFields(c: Json): { id: string; rawId: string; type: 'public-key'; clientExtensionResults: Record<string, never> } {
  return { id: c.id as string, rawId: c.id as string, type: 'public-key', clientExtensionResults: {} }
}

/** A registration response (navigator.credentials.create), or null when it is not one. */
export function readRegistration(text: string | undefined): RegistrationResponseJSON | null {
  const c = parse(text)
  const r = c && outer(c)
  if (!c || !r || !b64(r.clientDataJSON) || !b64(r.attestationObject)) return null
  const transports = r.transports === undefined ? [] : r.transports
  if (!Array.isArray(transports) || transports.length > 8 || !transports.every((t) => typeof t === 'string' && TRANSPORTS.has(t))) return null
  return {
    ...credentialFields(c),
    response: {
      clientDataJSON: r.clientDataJSON,
      attestationObject: r.attestationObject,
      transports: transports as RegistrationResponseJSON['response']['transports'],
    },
  }
}

/** An authentication response (navigator.credentials.get), or null when it is not one. */
export function readAssertion(text: string | undefined): AuthenticationResponseJSON | null {
  const c = parse(text)
  const r = c && outer(c)
  if (!c || !r || !b64(r.clientDataJSON) || !b64(r.authenticatorData) || !b64(r.signature) || !b64(r.userHandle, true)) return null
  return {
    ...credentialFields(c),
    response: {
      clientDataJSON: r.clientDataJSON,
      authenticatorData: r.authenticatorData,
      signature: r.signature,
      ...(typeof r.userHandle === 'string' ? { userHandle: r.userHandle } : {}),
    },
  }
}

/** The challenge the browser signed (clientDataJSON.challenge), or null when it has none of the right shape. */
export function challengeOf(clientDataJSON: string): string | null {
  try {
    const data = object(JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')))
    const challenge = data?.challenge
    return typeof challenge === 'string' && challenge.length > 0 && challenge.length <= 128 && B64URL.test(challenge) ? challenge : null
  } catch {
    return null
  }
}
