/**
 * `signals`: OpenID Shared Signals Framework 1.0 (docs/signals.md). Each
 * `transmitters[]` entry is an identity provider whose Security Event Tokens
 * (RFC 8417) bearward acts on, delivered by push (RFC 8935) or poll (RFC 8936).
 * Its keys come from `jwks_uri`, written by the operator, so fetched as written.
 */
import type { Node } from 'yaml'
import { enumAt, keysAt } from '../contract.js'
import type { Reader } from '../reader.js'
import { UniqueSet } from '../unique.js'
import type { IdentityProviderConfig, SignalsConfig, SignalTransmitterConfig, SignalTransmitterOutConfig } from '../validated-config.js'
import { isHostname } from '../listen.js'
import { checkHttpUrl } from '../values.js'

export const SIGNALS_KEYS = keysAt('#/properties/signals')
const TRANSMITTER_KEYS = keysAt('#/$defs/signalTransmitter')
const POLL_KEYS = keysAt('#/$defs/signalTransmitter/properties/poll')
const SUBJECT_KEYS = keysAt('#/$defs/signalTransmitter/properties/subjects')
const OUT_KEYS = keysAt('#/properties/signals/properties/transmitter')
const OUT_QUEUE_KEYS = keysAt('#/properties/signals/properties/transmitter/properties/queue')
const DELIVERIES = enumAt<SignalTransmitterConfig['delivery']>('#/$defs/signalTransmitter/properties/delivery')
const ON_SIGNAL = enumAt<SignalTransmitterConfig['onSignal']>('#/$defs/signalTransmitter/properties/on_signal')
/** Asymmetric JWS algorithms only: a SET signed with a shared secret or `none` is never accepted. */
const ALGORITHMS = enumAt<string>('#/$defs/signalTransmitter/properties/algorithms/items')

/** Defaults of `signals.transmitters[]` (docs/configuration.md, `signals`). */
export const SIGNAL_DEFAULTS = Object.freeze({
  algorithms: Object.freeze(['RS256', 'ES256']),
  onSignal: 'grants' as const,
  pollIntervalSec: 30,
  pollMaxEvents: 100,
  pollTimeoutMs: 10_000,
})
/** RFC 8936 lets the receiver ask for any number; more than this per poll is a transmitter's bulk export, not a stream. */
const MAX_POLL_EVENTS = 1000
const EMAIL_RULE = /^(users|provider:([A-Za-z0-9][A-Za-z0-9_-]{0,62}))$/

/**
 * Read `signals`. `providers`: the identity providers configured (an email rule
 * may name one); null without an authorization server, which `signals` needs:
 * there is nothing of bearward's own a signal could end.
 */
export function readSignals(r: Reader, node: Node, path: string, providers: readonly IdentityProviderConfig[] | null): SignalsConfig | null {
  const m = r.map(node, path, SIGNALS_KEYS)
  if (m === undefined) return null
  if (providers === null) {
    r.problem(node, path, "`signals` ends the sessions and grants of bearward's authorization server: add `authorization_server`, or remove `signals`")
  }
  const transmitters: SignalTransmitterConfig[] = []
  const issuers = new UniqueSet(r, 'transmitter issuer')
  const providerIds = new Set((providers ?? []).map((p) => p.id))
  const listNode = m.get('transmitters')
  for (const item of (listNode === undefined ? undefined : r.items(listNode, m.pathOf('transmitters'))) ?? []) {
    const t = r.map(item.node, item.path, TRANSMITTER_KEYS)
    if (t === undefined) continue
    const issuer = t.req('issuer', r.str({ check: (v) => checkHttpUrl(v) }))
    if (issuer !== undefined) issuers.add(issuer, t.get('issuer'), t.pathOf('issuer'))
    const jwksUri = t.req('jwks_uri', r.str({ check: (v) => checkHttpUrl(v, { query: true }) }))
    const audience = t.req('audience', r.str())
    const delivery = t.req('delivery', r.oneOf(DELIVERIES, { what: 'a delivery method' }), ' (`push` or `poll`)')
    const algorithms = t.opt('algorithms', r.list(r.oneOf(ALGORITHMS, { what: 'an asymmetric JWS algorithm' }), { nonEmpty: true }), [
      ...SIGNAL_DEFAULTS.algorithms,
    ])
    const onSignal = t.opt('on_signal', r.oneOf(ON_SIGNAL, { what: 'an on_signal value' }), SIGNAL_DEFAULTS.onSignal)
    const pollNode = t.get('poll')
    let poll: SignalTransmitterConfig['poll'] = null
    if (pollNode !== undefined) {
      const p = r.map(pollNode, t.pathOf('poll'), POLL_KEYS)
      const url = p?.req('url', r.str({ check: (v) => checkHttpUrl(v, { query: true }) }))
      if (p !== undefined && url !== undefined) {
        poll = {
          url,
          intervalSec: p.opt('interval', r.seconds({ min: 1 }), SIGNAL_DEFAULTS.pollIntervalSec),
          maxEvents: p.opt('max_events', r.int({ min: 1, max: MAX_POLL_EVENTS }), SIGNAL_DEFAULTS.pollMaxEvents),
          auth: p.maybe('auth', r.str()) ?? null,
          timeoutMs: p.opt('timeout', r.millis({ min: 1 }), SIGNAL_DEFAULTS.pollTimeoutMs),
        }
      }
    }
    if (delivery === 'poll' && pollNode === undefined) {
      r.problem(t.node, t.pathOf('poll'), "`delivery: poll` needs `poll: { url: https://... }`: the transmitter's poll endpoint")
    }
    if (delivery === 'push' && pollNode !== undefined) {
      r.problem(pollNode, t.pathOf('poll'), '`poll` is for `delivery: poll`; a push transmitter POSTs to <public_url>/signals/events')
    }
    let emailRule: SignalTransmitterConfig['subjects']['email'] = null
    const subjectsNode = t.get('subjects')
    if (subjectsNode !== undefined) {
      const s = r.map(subjectsNode, t.pathOf('subjects'), SUBJECT_KEYS)
      const rule = s?.maybe('email', r.str())
      if (rule !== undefined && s !== undefined) {
        const match = EMAIL_RULE.exec(rule)
        if (match === null) {
          r.problem(s.get('email'), s.pathOf('email'), '`email` is `users` or `provider:<identity provider id>`')
        } else if (match[2] === undefined) {
          emailRule = { kind: 'users' }
        } else if (!providerIds.has(match[2])) {
          r.problem(s.get('email'), s.pathOf('email'), `no identity provider has the id \`${match[2]}\``)
        } else {
          emailRule = { kind: 'provider', provider: match[2] }
        }
      }
    }
    if (issuer === undefined || jwksUri === undefined || audience === undefined || delivery === undefined) continue
    transmitters.push({ issuer, jwksUri, audience, delivery, algorithms, poll, onSignal, subjects: { email: emailRule }, position: item.path })
  }
  return { transmitters, transmitter: readTransmitterOut(r, m.get('transmitter'), m.pathOf('transmitter')) }
}

/** Events held per receiver by default (`signals.transmitter.queue.max`). */
export const TRANSMITTER_QUEUE_DEFAULT = 1000
/** More than this per receiver is memory for a receiver that is gone, not a queue. */
const TRANSMITTER_QUEUE_MAX = 100_000

/** `signals.transmitter`: null when absent or `enabled: false`. */
function readTransmitterOut(r: Reader, node: Node | undefined, path: string): SignalTransmitterOutConfig | null {
  if (node === undefined) return null
  const m = r.map(node, path, OUT_KEYS)
  if (m === undefined) return null
  const enabled = m.req('enabled', r.bool())
  const allowHosts = m.opt(
    'allow_hosts',
    r.list(
      r.str({
        check: (v) => (isHostname(v.replace(/^\[(.*)\]$/, '$1')) ? undefined : `\`${v}\` is not a host name (write the host alone, without scheme or port)`),
      }),
    ),
    [],
  )
  const queue = r.map(m.get('queue'), m.pathOf('queue'), OUT_QUEUE_KEYS)
  const queueMax = queue?.opt('max', r.int({ min: 1, max: TRANSMITTER_QUEUE_MAX }), TRANSMITTER_QUEUE_DEFAULT) ?? TRANSMITTER_QUEUE_DEFAULT
  if (enabled !== true) return null
  return { allowHosts: [...new Set(allowHosts.map((h) => h.toLowerCase()))], queueMax }
}

/**
 * How a transmitter's JWKS is cached (src/gateway/jwks-client.ts): the
 * settings an `issuers[]` entry gets by default, not configurable here.
 */
export const TRANSMITTER_JWKS = Object.freeze({
  minTtlSec: 300,
  maxTtlSec: 86_400,
  cooldownSec: 30,
  staleSec: 86_400,
  firstFetchWaitMs: 2000,
  timeoutMs: 5000,
})
