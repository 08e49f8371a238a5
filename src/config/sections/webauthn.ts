/**
 * `authorization_server.webauthn`: passkeys for local users (docs/people.md).
 * The relying party is public_url unless told otherwise: its host is the RP
 * ID and its origin the one origin assertions may come from. A different
 * `rp_id` must be the host of every origin or a parent domain of it
 * (WebAuthn Level 3, 5.1.4.1 and 5.1.3 step 8: otherwise browsers refuse
 * every ceremony, so the mistake is caught here, not by the first person).
 * An RP ID is a domain, never an IP address: with a public_url like
 * `http://127.0.0.1:8080` passkeys are off unless `enabled: true` asks for
 * them (a problem then: give `rp_id` and `origins`, or use `localhost`).
 * @see https://www.w3.org/TR/webauthn-3/#rp-id
 */
import type { Node } from 'yaml'
import type { WebAuthnConfig } from '../validated-config.js'
import type { Reader } from '../reader.js'
import { keysAt } from '../contract.js'
import { checkOrigin } from '../values.js'
import { isIP } from 'node:net'

export const WEBAUTHN_KEYS = keysAt('#/$defs/authorizationServer/properties/webauthn')

/** A host name the RP ID covers: the same, or a subdomain of it. */
export function rpIdCovers(rpId: string, host: string): boolean {
  return host === rpId || host.endsWith(`.${rpId}`)
}

/** The resolved relying party; defaults come from `publicUrl`. */
export function readWebAuthn(r: Reader, node: Node | undefined, path: string, publicUrl: string): WebAuthnConfig {
  const url = new URL(publicUrl)
  const m = node === undefined ? undefined : r.map(node, path, WEBAUTHN_KEYS)
  const askedFor = m?.maybe('enabled', r.bool())
  const rpName = m?.opt('rp_name', r.str(), 'bearward') ?? 'bearward'
  const rpIdNode = m?.get('rp_id')
  const rpId = (
    m?.maybe(
      'rp_id',
      r.str({
        check: (v) =>
          /^[a-z0-9.-]+$/.test(v) && !v.startsWith('.') && !v.endsWith('.') ? undefined : 'an RP ID is a lower-case host name, like `example.com`',
      }),
    ) ?? url.hostname
  ).toLowerCase()
  const listed = m?.maybe('origins', r.located(r.str({ check: checkOrigin }), { nonEmpty: true }))
  const origins = listed === undefined ? [url.origin] : [...new Set(listed.map((o) => o.value))]
  for (const o of listed ?? []) {
    const host = new URL(o.value).hostname
    if (!rpIdCovers(rpId, host)) r.problem(o.node, o.path, `the RP ID \`${rpId}\` does not cover \`${host}\`: it must be that host or a parent domain of it`)
  }
  if (listed === undefined && !rpIdCovers(rpId, url.hostname)) {
    r.problem(
      rpIdNode,
      m?.pathOf('rp_id') ?? path,
      `the RP ID \`${rpId}\` does not cover public_url's host \`${url.hostname}\`: it must be that host or a parent domain of it`,
    )
  }
  const onIp = isIP(rpId.replace(/^\[|\]$/g, '')) !== 0
  if (onIp && askedFor === true) {
    r.problem(
      m?.get('enabled'),
      m?.pathOf('enabled') ?? path,
      `passkeys need a domain name as RP ID, not the address \`${rpId}\`: set \`rp_id\` and \`origins\`, or a public_url on a host name (\`localhost\` works for a test)`,
    )
  }
  return { enabled: (askedFor ?? true) && !onIp, rpId, rpName, origins }
}
