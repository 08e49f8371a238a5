/**
 * `http2`: HTTP/2 on `listen` (docs/http2-grpc.md). Off unless asked: `tls`
 * offers `h2` by ALPN beside `http/1.1` on a TLS listen, `cleartext` takes
 * h2c with prior knowledge (RFC 9113 3.3) beside HTTP/1.1 on a plain one.
 * The bounds are per connection (resets per client address too) and apply
 * to connections opened after a reload.
 */
import type { Node } from 'yaml'
import type { Http2Config } from '../validated-config.js'
import type { MapView, Reader } from '../reader.js'
import { keysAt } from '../contract.js'

const HTTP2_KEYS = keysAt('#/properties/http2')

/** Defaults: nothing changes for a config without `http2`. */
export const DEFAULT_HTTP2: Readonly<Http2Config> = Object.freeze({
  tls: false,
  cleartext: false,
  // nginx's and Envoy's default; the CVE-2023-44487 advisories' bound.
  maxConcurrentStreams: 100,
  // The same 16 KiB Node's HTTP/1.1 parser allows a request head.
  maxHeaderListBytes: 16 * 1024,
  maxResets: 200,
  // Two connections' worth: one address's connections together (a client that spreads its resets over many).
  maxResetsPerAddress: 400,
  resetWindowMs: 10_000,
})

export function readHttp2(r: Reader, top: MapView, tlsOn: boolean): Http2Config {
  const node: Node | undefined = top.get('http2')
  if (node === undefined || top.isNull('http2')) return { ...DEFAULT_HTTP2 }
  const m = r.map(node, top.pathOf('http2'), HTTP2_KEYS)
  if (m === undefined) return { ...DEFAULT_HTTP2 }
  const d = DEFAULT_HTTP2
  const config: Http2Config = {
    tls: m.opt('tls', r.bool(), d.tls),
    cleartext: m.opt('cleartext', r.bool(), d.cleartext),
    maxConcurrentStreams: m.opt('max_concurrent_streams', r.int({ min: 1, max: 1000 }), d.maxConcurrentStreams),
    maxHeaderListBytes: m.opt('max_header_list_size', r.bytes({ min: 1024 }), d.maxHeaderListBytes),
    maxResets: m.opt('max_resets', r.int({ min: 1 }), d.maxResets),
    maxResetsPerAddress: m.opt('max_resets_per_address', r.int({ min: 1 }), d.maxResetsPerAddress),
    resetWindowMs: m.opt('reset_window', r.millis({ min: 100 }), d.resetWindowMs),
  }
  if (config.tls && !tlsOn) r.problem(m.get('tls'), m.pathOf('tls'), '`http2.tls` offers h2 by ALPN on a TLS listen: set `tls` too, or use `http2.cleartext`')
  if (config.cleartext && tlsOn) {
    r.problem(m.get('cleartext'), m.pathOf('cleartext'), '`http2.cleartext` is h2c on a plain listen; on a TLS listen use `http2.tls: true`')
  }
  return config
}
