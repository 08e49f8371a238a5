/**
 * The `Forwarded` header the gateway appends for its own hop (RFC 7239).
 * Whether incoming forwarding headers are believed is decided by the
 * trusted-proxy matcher both faces share (`http/trusted-proxies.ts`).
 */

/**
 * One `Forwarded` element for this hop (RFC 7239 4): `for=...;host=...;proto=...`.
 * IPv6 nodes are bracketed and quoted (RFC 7239 6); host is always a
 * quoted-string because it may carry a port (`:` is not a token character).
 */
export function forwardedElement(peer: string | undefined, host: string | undefined, proto: string): string {
  let element = 'for='
  if (peer === undefined) element += 'unknown'
  else if (peer.includes(':')) element += `"[${peer}]"`
  else element += peer
  if (host !== undefined) element += `;host=${quoted(host)}`
  return element + ';proto=' + proto
}

function quoted(value: string): string {
  if (!value.includes('"') && !value.includes('\\')) return `"${value}"`
  let out = '"'
  for (const ch of value) out += ch === '"' || ch === '\\' ? '\\' + ch : ch
  return out + '"'
}
