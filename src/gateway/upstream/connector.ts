import type { buildConnector } from 'undici'

/**
 * The TLS server name is the upstream's, never the client's Host. undici
 * derives it from a request's Host header when none is given, which with
 * `preserve_host` would check the upstream certificate against whatever
 * host the client named and reconnect whenever that changed; so every
 * request to an https upstream names it. For an IP-literal upstream that
 * name is only a constant for undici's bookkeeping: this connector drops it,
 * so no SNI is sent (RFC 6066 3 allows host names only) and the certificate
 * is checked against the address.
 */
export function withoutServername(connect: buildConnector.connector): buildConnector.connector {
  return (options, callback) => connect({ ...options, servername: undefined }, callback)
}
