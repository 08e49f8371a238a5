/**
 * `authorization_server.registration`: RFC 7591 dynamic client registration
 * (off by default). A client that registers itself is limited to
 * `scopes` (default: every known scope), forgotten after `client_ttl` unused,
 * each address may register `rate_limit.per_address` clients per window, and
 * the store holds at most `max_clients` live ones.
 */
import { SSF_STREAM_SCOPE } from './ssf-scope.js'
import type { Node } from 'yaml'
import type { RegistrationConfig } from '../validated-config.js'
import type { Reader } from '../reader.js'
import { keysAt } from '../contract.js'

const RATE_LIMIT_KEYS = keysAt('#/$defs/authorizationServer/properties/registration/properties/rate_limit')
export const REGISTRATION_KEYS = keysAt('#/$defs/authorizationServer/properties/registration')

const DEFAULT_CLIENT_TTL_SEC = 30 * 86400
const DEFAULT_PER_ADDRESS = 30
const DEFAULT_WINDOW_SEC = 3600
/** Enough for any real population of self-registered clients; a bound on what strangers can make the store hold. */
const DEFAULT_MAX_CLIENTS = 10_000
/** An initial access token is a bearer secret: too short and it can be guessed. */
const MIN_INITIAL_TOKEN = 16

/** The registration settings, or null when registration is off. */
export function readRegistration(r: Reader, node: Node | undefined, path: string, knownScopes: ReadonlySet<string>): RegistrationConfig | null {
  if (node === undefined) return null
  const m = r.map(node, path, REGISTRATION_KEYS)
  if (m === undefined) return null
  const enabled = m.opt('enabled', r.bool(), false)
  const initialAccessToken = m.isNull('initial_access_token')
    ? null
    : (m.maybe(
        'initial_access_token',
        r.str({
          check: (v) =>
            v.length >= MIN_INITIAL_TOKEN ? undefined : `an initial access token must be at least ${MIN_INITIAL_TOKEN} characters (it is a bearer secret)`,
        }),
      ) ?? null)
  const listed = m.maybe('scopes', r.located(r.str()))
  for (const s of listed ?? []) {
    if (!knownScopes.has(s.value)) r.problem(s.node, s.path, `unknown scope \`${s.value}\`; declare it under \`authorization_server.scopes\``)
  }
  const rate = r.map(m.get('rate_limit'), m.pathOf('rate_limit'), RATE_LIMIT_KEYS)
  const config: RegistrationConfig = {
    initialAccessToken,
    // Strangers' clients use the code flow: `ssf:stream` (a receiver's client-credentials scope) is not theirs by default.
    scopes: listed === undefined ? [...knownScopes].filter((s) => s !== SSF_STREAM_SCOPE) : [...new Set(listed.map((s) => s.value))],
    clientTtlSec: m.opt('client_ttl', r.seconds({ min: 60 }), DEFAULT_CLIENT_TTL_SEC),
    maxClients: m.opt('max_clients', r.int({ min: 1 }), DEFAULT_MAX_CLIENTS),
    perAddress: rate?.opt('per_address', r.int({ min: 1 }), DEFAULT_PER_ADDRESS) ?? DEFAULT_PER_ADDRESS,
    windowSec: rate?.opt('window', r.seconds({ min: 1 }), DEFAULT_WINDOW_SEC) ?? DEFAULT_WINDOW_SEC,
  }
  return enabled ? config : null
}
