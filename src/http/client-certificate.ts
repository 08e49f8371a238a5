/**
 * The client certificate of a request, for both faces: the authorization
 * server authenticates clients by it (`tls_client_auth`,
 * `self_signed_tls_client_auth`) and binds tokens to it; the gateway checks
 * a bound token against it (RFC 8705).
 *
 * Two sources, never both for one request:
 * - the TLS connection (`tls.client_ca` on `listen`): the certificate the
 *   client proved it holds the key of in the handshake; `verified` when its
 *   chain leads to `client_ca` (Node's `socket.authorized`);
 * - behind a proxy that terminates TLS, `gateway.client_certificate_header`,
 *   read only when the TCP peer is one of `gateway.trusted_proxies`. The
 *   proxy is trusted to have verified the chain (nginx `ssl_verify_client
 *   on|optional`, never `optional_no_ca`; Envoy with a trusted CA), so a
 *   certificate it reports counts as verified. The header's forms: Envoy's
 *   `X-Forwarded-Client-Cert` with a single element holding `Cert="<URL-encoded
 *   PEM>"` (`forward_client_cert_details: SANITIZE_SET`); the URL-encoded PEM
 *   nginx's `$ssl_client_escaped_cert` gives; a bare PEM; or base64 DER
 *   (HAProxy's `%[ssl_c_der,base64]`). From any other peer the header is
 *   ignored, and the gateway strips it ({@link ClientCertificates.headerNames})
 *   so it never reaches an upstream. On a trusted proxy's connection the
 *   header is the only source: a certificate on that connection is the
 *   proxy's own.
 *
 * A certificate is read once per connection (cached by socket) or once per
 * header value; a malformed one is treated as absent.
 *
 * @see https://www.rfc-editor.org/rfc/rfc8705#section-2
 * @see https://www.rfc-editor.org/rfc/rfc8705#section-3
 */
import { createHash, type KeyObject, X509Certificate } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { TLSSocket } from 'node:tls'
import type { GatewayConfig } from '../config/validated-config.js'
import { type CertificateNames, type SubjectAltNames, parseCertificateNames } from './der.js'
import { canonicalName, formatDistinguishedName } from './distinguished-name.js'
import { peerAddress, type TrustedProxies } from './trusted-proxies.js'

/** A client certificate, read. */
export interface ClientCertificate {
  /** The certificate's DER. */
  readonly der: Buffer
  /** `x5t#S256`: base64url of the SHA-256 of the DER (RFC 8705 3.1). */
  readonly thumbprint: string
  /** The subject as an RFC 4514 string (for logs and documentation). */
  readonly subjectDn: string
  /** The subject in the form `tls_client_auth_subject_dn` is compared in (distinguished-name.ts). */
  readonly subjectCanonical: string
  readonly san: SubjectAltNames
  readonly publicKey: KeyObject
  /**
   * The chain was verified: against `tls.client_ca` on our own listener, or
   * by the trusted proxy that reported it. A certificate presented on our
   * listener that `client_ca` does not vouch for has `verified: false`.
   */
  readonly verified: boolean
  readonly source: 'tls' | 'proxy'
}

/**
 * The certificate in `der`, or null when it does not parse.
 * @see https://www.rfc-editor.org/rfc/rfc8705#section-3.1
 */
export function readClientCertificate(der: Buffer, verified: boolean, source: 'tls' | 'proxy'): ClientCertificate | null {
  let publicKey: KeyObject
  let names: CertificateNames
  try {
    // The key getter decodes lazily and throws on a malformed key: read inside the guard.
    publicKey = new X509Certificate(der).publicKey
    names = parseCertificateNames(der)
  } catch {
    // DerError, or Node's own refusal of the DER: no certificate to speak of.
    return null
  }
  return {
    der,
    thumbprint: certificateThumbprint(der),
    subjectDn: formatDistinguishedName(names.subject),
    subjectCanonical: canonicalName(names.subject),
    san: names.san,
    publicKey,
    verified,
    source,
  }
}

/**
 * `x5t#S256` of a DER certificate.
 * @see https://www.rfc-editor.org/rfc/rfc8705#section-3.1
 */
export function certificateThumbprint(der: Buffer): string {
  return createHash('sha256').update(der).digest('base64url')
}

/** Exactly one PEM certificate and nothing else: a value holding more (two joined header lines) is not one certificate. */
const PEM = /^\s*-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+)-----END CERTIFICATE-----\s*$/
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/** The certificate of a PEM text holding exactly one, or null. */
function pemToDer(text: string): Buffer | null {
  const m = PEM.exec(text)
  if (m === null) return null
  const body = (m[1] as string).replace(/\s+/g, '')
  return BASE64.test(body) ? Buffer.from(body, 'base64') : null
}

function urlDecode(text: string): string | null {
  try {
    return decodeURIComponent(text)
  } catch {
    return null
  }
}

/**
 * The elements of an XFCC value (`k=v;k="v",k=v`): a comma separates
 * elements and a semicolon pairs, except inside double quotes, where a
 * backslash escapes the next character.
 * @see https://www.envoyproxy.io/docs/envoy/latest/configuration/http/http_conn_man/headers#x-forwarded-client-cert
 */
export function parseXfcc(value: string): Array<Map<string, string>> | null {
  const elements: Array<Map<string, string>> = []
  let pairs = new Map<string, string>()
  const n = value.length
  let i = 0
  const skipSpaces = (): void => {
    while (value[i] === ' ' || value[i] === '\t') i++
  }
  for (;;) {
    skipSpaces()
    const eq = value.indexOf('=', i)
    if (eq === -1) return null
    const key = value.slice(i, eq).trim().toLowerCase()
    if (key === '' || /[;,"]/.test(key)) return null
    i = eq + 1
    skipSpaces()
    let text = ''
    if (value[i] === '"') {
      i++
      for (;;) {
        if (i >= n) return null
        const c = value[i] as string
        if (c === '\\') {
          if (i + 1 >= n) return null
          text += value[i + 1]
          i += 2
        } else if (c === '"') {
          i++
          break
        } else {
          text += c
          i++
        }
      }
      skipSpaces()
      if (i < n && value[i] !== ';' && value[i] !== ',') return null
    } else {
      const start = i
      while (i < n && value[i] !== ';' && value[i] !== ',') i++
      text = value.slice(start, i).trim()
      if (text.includes('"')) return null
    }
    // A key given twice in one element (two Cert=) is not guessed between.
    if (pairs.has(key)) return null
    pairs.set(key, text)
    if (i >= n) {
      elements.push(pairs)
      return elements
    }
    if (value[i] === ',') {
      elements.push(pairs)
      pairs = new Map()
    }
    i++
  }
}

/**
 * The DER of the certificate a proxy's header carries, or null: an XFCC
 * value with exactly one element (more means hops we cannot tell apart:
 * Envoy must replace the header, `SANITIZE_SET`, not append to it) and its
 * `Cert`; a URL-encoded or bare PEM; or base64 DER.
 */
export function certificateFromHeader(value: string): Buffer | null {
  const trimmed = value.trim()
  if (trimmed === '') return null
  if (/^(?:-----BEGIN|%2D)/i.test(trimmed)) {
    const pem = urlDecode(trimmed)
    return pem === null ? null : pemToDer(pem)
  }
  if (BASE64.test(trimmed)) return Buffer.from(trimmed, 'base64')
  const elements = parseXfcc(trimmed)
  if (elements === null || elements.length !== 1) return null
  const cert = elements[0]?.get('cert')
  if (cert === undefined) return null
  const pem = urlDecode(cert)
  return pem === null ? null : pemToDer(pem)
}

/**
 * Header names no client may send and no upstream may receive: the
 * configured `gateway.client_certificate_header` (lower case), or none. The
 * gateway strips them from every forwarded request, a trusted proxy's too:
 * the upstream never learns a certificate from a header.
 */
export function clientCertificateHeaderNames(gateway: Pick<GatewayConfig, 'clientCertificateHeader'>): readonly string[] {
  return gateway.clientCertificateHeader === null ? [] : [gateway.clientCertificateHeader.toLowerCase()]
}

/** How many lines of `rawHeaders` (name, value, name, value...) carry the header `name` (lower case). */
function linesOf(rawHeaders: readonly string[] | undefined, name: string): number {
  if (rawHeaders === undefined) return 0
  let count = 0
  for (let i = 0; i < rawHeaders.length; i += 2) if ((rawHeaders[i] as string).toLowerCase() === name) count++
  return count
}

/** The TLS socket under a request: HTTP/1.1's own, or an HTTP/2 stream's session's (the compat API's `req.socket` is a per-request proxy). */
function tlsSocketOf(req: IncomingMessage): TLSSocket | null {
  const h2 = (req as { stream?: { session?: { socket?: unknown } } }).stream?.session?.socket
  const socket = (h2 ?? req.socket) as Partial<TLSSocket> | undefined
  return socket !== undefined && typeof socket.getPeerX509Certificate === 'function' ? (socket as TLSSocket) : null
}

/**
 * The client certificates of one Runtime's requests: which header a trusted
 * proxy reports them in, and a cache of each connection's certificate.
 */
export class ClientCertificates {
  readonly #trusted: TrustedProxies
  /** The configured header, lower case, or null. */
  readonly #header: string | null
  readonly #bySocket = new WeakMap<TLSSocket, ClientCertificate | null>()
  /** The last header value read and its certificate: a proxy's connection carries one client's value again and again. */
  #lastHeader: { value: string; cert: ClientCertificate | null } | null = null

  constructor(trusted: TrustedProxies, header: string | null) {
    this.#trusted = trusted
    this.#header = header === null ? null : header.toLowerCase()
  }

  /** {@link clientCertificateHeaderNames} of this Runtime's config. */
  headerNames(): readonly string[] {
    return clientCertificateHeaderNames({ clientCertificateHeader: this.#header })
  }

  /**
   * The certificate the client presented, verified or not (RFC 8705 2.2's
   * self-signed certificates, and the binding of tokens, RFC 8705 3, need
   * only proof of possession of its key); null when none.
   */
  presented(req: IncomingMessage): ClientCertificate | null {
    // A trusted proxy's connection is the proxy's: a certificate on it is the proxy's own (a mesh
    // proxy re-encrypting with its workload certificate), never the client's. Only its header speaks
    // for the client. Anyone else's header is ignored, and their connection's certificate is theirs.
    if (this.#header !== null && this.#trusted.has(peerAddress(req.socket))) return this.#fromHeader(req)
    const socket = tlsSocketOf(req)
    if (socket === null) return null
    if (this.#bySocket.has(socket)) return this.#bySocket.get(socket) ?? null
    const x509 = socket.getPeerX509Certificate()
    const cert = x509 === undefined ? null : readClientCertificate(x509.raw, socket.authorized === true, 'tls')
    this.#bySocket.set(socket, cert)
    return cert
  }

  /** The certificate when its chain was verified (RFC 8705 2.1's PKI method); null otherwise. */
  verified(req: IncomingMessage): ClientCertificate | null {
    const cert = this.presented(req)
    return cert?.verified === true ? cert : null
  }

  /** The header's certificate; the caller has checked that the peer is a trusted proxy. */
  #fromHeader(req: IncomingMessage): ClientCertificate | null {
    if (this.#header === null) return null
    const raw = req.headers[this.#header]
    if (raw === undefined) return null
    // Two copies of the header: not one proxy's statement. Node joins repeated lines into one value
    // ("client's, proxy's" when a proxy adds its line instead of replacing), so count the lines themselves.
    if (Array.isArray(raw) || linesOf(req.rawHeaders, this.#header) > 1) return null
    const last = this.#lastHeader
    if (last !== null && last.value === raw) return last.cert
    const der = certificateFromHeader(raw)
    const cert = der === null ? null : readClientCertificate(der, true, 'proxy')
    this.#lastHeader = { value: raw, cert }
    return cert
  }
}
