/**
 * Why a Security Event Token was refused, with the RFC 8935 §2.4 / RFC 8936
 * §2.4 error code the transmitter reads (`{"err": ..., "description": ...}`).
 * Descriptions are fixed sentences; what jose said stays in `cause` for the log.
 */

/** RFC 8935 §2.4 (the IANA "Security Event Token Error Codes" registry). */
export type SetErrCode = 'invalid_request' | 'invalid_key' | 'invalid_issuer' | 'invalid_audience' | 'authentication_failed' | 'access_denied'

export class SetRefused extends Error {
  /** Stable code (jose style), e.g. `ERR_SET_INVALID_ISSUER`. */
  readonly code: string
  readonly err: SetErrCode
  readonly description: string
  /** 400 for a refusal; 503 when the transmitter's keys cannot be loaded (a retry may succeed). */
  readonly status: 400 | 503

  constructor(err: SetErrCode, description: string, options: { cause?: unknown; status?: 400 | 503 } = {}) {
    super(description, options.cause === undefined ? {} : { cause: options.cause })
    this.name = 'SetRefused'
    this.err = err
    this.description = description
    this.status = options.status ?? 400
    this.code = `ERR_SET_${err.toUpperCase()}`
  }

  /** The error body both deliveries send (push: the 400 body; poll: a `setErrs` member). */
  toJSON(): { err: SetErrCode; description: string } {
    return { err: this.err, description: this.description }
  }
}
