/**
 * The event types bearward acts on, and what each does (docs/signals.md).
 * URIs of OpenID CAEP 1.0 §3 and OpenID RISC 1.0 §2; the SSF 1.0 §8.1.4
 * verification event is acknowledged and does nothing.
 */
import type { SignalTransmitterConfig } from '../config/validated-config.js'
import type { OwnAcr } from '../tokens/acr.js'

const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/'
const RISC = 'https://schemas.openid.net/secevent/risc/event-type/'

export const EVENT = Object.freeze({
  sessionRevoked: `${CAEP}session-revoked`,
  tokenClaimsChange: `${CAEP}token-claims-change`,
  credentialChange: `${CAEP}credential-change`,
  assuranceLevelChange: `${CAEP}assurance-level-change`,
  sessionsRevoked: `${RISC}sessions-revoked`,
  credentialCompromise: `${RISC}credential-compromise`,
  accountDisabled: `${RISC}account-disabled`,
  accountPurged: `${RISC}account-purged`,
  accountEnabled: `${RISC}account-enabled`,
  verification: 'https://schemas.openid.net/secevent/ssf/event-type/verification',
})

/** What one event asks of bearward. */
export type SignalAction =
  /** End the person's sessions (`grants`: and their grants). */
  | { kind: 'end'; grants: boolean }
  /** CAEP assurance-level-change: end the sessions whose sign-in ranks above `level` (bearward's acr). */
  | { kind: 'lower-assurance'; level: AssuranceLevel }
  /** CAEP token-claims-change: end the grants whose tokens carry one of `claims`. */
  | { kind: 'claims-changed'; claims: readonly string[] }
  /** RISC account-disabled / -purged: end everything, refuse new sign-ins until enabled. */
  | { kind: 'disable' }
  /** RISC account-enabled: sign-ins are accepted again. */
  | { kind: 'enable' }
  /** Known and harmless (verification), or not one bearward acts on: acknowledged. */
  | { kind: 'none'; why: string }

/** A level in bearward's own acr values (src/tokens/acr.ts). */
export type AssuranceLevel = OwnAcr

/**
 * NIST SP 800-63 AAL levels (CAEP 3.4 namespace `NIST-AAL`) in bearward's
 * terms: AAL1 a password, AAL2 two factors, AAL3 phishing-resistant. Other
 * namespaces are mapped by the transmitter's identity provider `acr_values`
 * when it names the level, else not acted on.
 */
const NIST_AAL: Readonly<Record<string, AssuranceLevel>> = { 'nist-aal1': 'pwd', 'nist-aal2': 'mfa', 'nist-aal3': 'phr' }

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined
}

/**
 * The action for one member of a SET's `events` claim. `acrMap`: the
 * provider's acr values in bearward's terms (`identity_providers[].acr_values`),
 * for an assurance level a namespace other than NIST names.
 */
export function actionFor(
  uri: string,
  body: Readonly<Record<string, unknown>>,
  onSignal: SignalTransmitterConfig['onSignal'],
  acrMap: Readonly<Record<string, AssuranceLevel>>,
): SignalAction {
  switch (uri) {
    case EVENT.sessionRevoked:
    case EVENT.sessionsRevoked:
      // The issue: these end the person's sessions; grants only when the operator says so.
      return { kind: 'end', grants: onSignal === 'grants' }
    case EVENT.credentialChange:
    case EVENT.credentialCompromise:
      return { kind: 'end', grants: true }
    case EVENT.accountDisabled:
    case EVENT.accountPurged:
      return { kind: 'disable' }
    case EVENT.accountEnabled:
      return { kind: 'enable' }
    case EVENT.assuranceLevelChange: {
      const current = str(body.current_level)
      if (current === undefined) return { kind: 'none', why: 'assurance-level-change without current_level' }
      const level = NIST_AAL[current.toLowerCase().replace(/_/g, '-')] ?? acrMap[current]
      if (level === undefined) return { kind: 'none', why: 'assurance level not known to bearward' }
      return { kind: 'lower-assurance', level }
    }
    case EVENT.tokenClaimsChange: {
      const claims = body.claims
      if (typeof claims !== 'object' || claims === null || Array.isArray(claims)) return { kind: 'none', why: 'token-claims-change without claims' }
      return { kind: 'claims-changed', claims: Object.keys(claims) }
    }
    case EVENT.verification:
      return { kind: 'none', why: 'verification' }
    default:
      return { kind: 'none', why: 'event type not acted on' }
  }
}
