/**
 * Certificate-bound access tokens (RFC 8705 3) as both faces read them: the
 * `cnf` claim of a token (or an introspection answer) and the check a
 * resource makes, that the request presents the certificate the token is
 * bound to.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8705#section-3
 */
import { timingSafeEqual } from 'node:crypto'
import { CertificateBindingMismatch } from '../errors.js'
import type { ClientCertificate } from '../http/client-certificate.js'

/** The confirmation members bearward issues and checks. */
export interface Confirmation {
  /** RFC 9449 6.1 `cnf.jkt`, or null. */
  readonly jkt: string | null
  /** RFC 8705 3.1 `cnf["x5t#S256"]`, or null. */
  readonly x5t: string | null
}

/** 43 base64url characters: a SHA-256 thumbprint. */
const THUMBPRINT = /^[A-Za-z0-9_-]{43}$/

/**
 * The `cnf` of a token's claims: `{ jkt: null, x5t: null }` without one;
 * false when it is present but binds to nothing we can check (not an object,
 * a member of the wrong shape, or no member we know): such a token is bound
 * to something we cannot verify, so it is refused.
 * @see https://www.rfc-editor.org/rfc/rfc7800#section-3.1
 */
export function readConfirmation(cnf: unknown): Confirmation | false {
  if (cnf === undefined) return { jkt: null, x5t: null }
  if (typeof cnf !== 'object' || cnf === null || Array.isArray(cnf)) return false
  const members = cnf as Record<string, unknown>
  const jkt = members.jkt
  const x5t = members['x5t#S256']
  if (jkt !== undefined && (typeof jkt !== 'string' || jkt === '')) return false
  if (x5t !== undefined && (typeof x5t !== 'string' || !THUMBPRINT.test(x5t))) return false
  if (jkt === undefined && x5t === undefined) return false
  return { jkt: jkt ?? null, x5t: x5t ?? null }
}

/**
 * Whether the request's certificate is the one a token is bound to: null
 * when it is (or the token is not certificate-bound), else the error to
 * answer (401 invalid_token, saying why). `certificate` is the certificate
 * the client presented, verified or not (`ClientCertificates.presented`):
 * the TLS handshake proved the client holds its key, which is all the
 * binding asks (RFC 8705 3).
 *
 * The gateway calls it for every token it accepts; a `cnf` it cannot read
 * (see {@link readConfirmation}) is refused there before this is reached.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8705#section-3
 */
export function checkCertificateBinding(cnf: unknown, certificate: ClientCertificate | null): CertificateBindingMismatch | null {
  const confirmation = readConfirmation(cnf)
  if (confirmation === false)
    return new CertificateBindingMismatch('The access token is bound to something this server cannot check', { cause: 'unreadable cnf' })
  return confirmation.x5t === null ? null : checkBoundCertificate(confirmation.x5t, certificate)
}

/**
 * {@link checkCertificateBinding} for a token already known to be bound to
 * the certificate whose thumbprint is `x5t` (the gateway reads `cnf` once,
 * when it verifies the token, and checks the certificate on every request).
 *
 * @see https://www.rfc-editor.org/rfc/rfc8705#section-3
 */
export function checkBoundCertificate(x5t: string, certificate: ClientCertificate | null): CertificateBindingMismatch | null {
  if (certificate === null) {
    return new CertificateBindingMismatch('The access token is bound to a client certificate: present it', {
      cause: 'certificate-bound token without a certificate',
    })
  }
  const expected = Buffer.from(x5t, 'latin1')
  const presented = Buffer.from(certificate.thumbprint, 'latin1')
  if (expected.length !== presented.length || !timingSafeEqual(expected, presented)) {
    return new CertificateBindingMismatch('The access token is bound to another client certificate', { cause: 'certificate thumbprint differs' })
  }
  return null
}
