/**
 * `host:port` listen addresses: `0.0.0.0:8080`, `localhost:8080`,
 * `[::1]:8080` (IPv6 in brackets, as in URLs). Port 0 asks the OS for a free
 * port (tests use it).
 */
import { isIP } from 'node:net'
import type { ListenAddress } from './validated-config.js'
import type { ParseResult } from './duration.js'

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/

/** True for a DNS name or an IP literal (IPv6 without brackets). */
export function isHostname(host: string): boolean {
  return isIP(host) !== 0 || HOSTNAME.test(host)
}

export function parseListenAddress(input: string): ParseResult<ListenAddress> {
  const usage = 'write `host:port`, e.g. `0.0.0.0:8080` or `[::1]:8080`'
  let host: string
  let portText: string
  if (input.startsWith('[')) {
    const close = input.indexOf(']')
    if (close === -1 || input[close + 1] !== ':') return { ok: false, reason: `\`${input}\` is not a listen address; ${usage}` }
    host = input.slice(1, close)
    portText = input.slice(close + 2)
    if (isIP(host) !== 6) return { ok: false, reason: `\`${host}\` in brackets is not an IPv6 address` }
  } else {
    const colon = input.lastIndexOf(':')
    if (colon === -1) return { ok: false, reason: `\`${input}\` has no port; ${usage}` }
    host = input.slice(0, colon)
    portText = input.slice(colon + 1)
    if (host.includes(':')) return { ok: false, reason: `IPv6 addresses need brackets: \`[${host}]:${portText}\`` }
    if (!isHostname(host)) return { ok: false, reason: `\`${host}\` is not a host name or IP address; ${usage}` }
  }
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) {
    return { ok: false, reason: `\`${portText}\` is not a port (0-65535); ${usage}` }
  }
  return { ok: true, value: { host, port: Number(portText) } }
}

/**
 * True when `host` can only be reached from this machine. Listen hosts only
 * (no brackets): a DNS name other than localhost may resolve anywhere.
 */
export function isLoopbackHost(host: string): boolean {
  const lower = host.toLowerCase()
  // 127.0.0.0/8 as an IPv4 address only: `127.300.0.1` is not one, and listen would look it up as a DNS name.
  return lower === 'localhost' || lower.endsWith('.localhost') || lower === '::1' || (isIP(lower) === 4 && lower.startsWith('127.'))
}
