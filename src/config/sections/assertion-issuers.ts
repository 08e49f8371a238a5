/**
 * `authorization_server.assertion_issuers[]`: issuers whose JWTs bearward
 * accepts as RFC 7523 assertions (docs/agents.md). Keys are inline (`jwks`)
 * or at `jwks_uri` (written by the operator, so fetched as written).
 * - `kind: id-jag`: a person's Identity Assertion JWT Authorization Grant at
 *   grant_type jwt-bearer; the person is found through an
 *   `identity_providers` entry with the same issuer, or `person.claim`.
 * - `kind: workload`: a platform token (Kubernetes service account, SPIFFE
 *   JWT-SVID) authenticates a client: `subjects` maps the token's `sub` to a
 *   client_id.
 */
import type { Node } from 'yaml'
import { jwkSetProblem } from '../../keys/jwk-set.js'
import { enumAt, keysAt } from '../contract.js'
import type { Reader } from '../reader.js'
import type { AssertionIssuerConfig, JwkSetDocument } from '../validated-config.js'
import { UniqueSet } from '../unique.js'
import { checkProviderIssuer } from './identity-providers.js'

export const ASSERTION_ISSUER_KEYS = keysAt('#/$defs/assertionIssuer')
const PERSON_KEYS = keysAt('#/$defs/assertionIssuer/properties/person')
const KINDS = enumAt<AssertionIssuerConfig['kind']>('#/$defs/assertionIssuer/properties/kind')
/** The asymmetric JWS algorithms bearward verifies (never none, never HMAC). */
export const ASSERTION_ALGS = enumAt<string>('#/$defs/assertionIssuer/properties/algorithms/items')

export function readAssertionIssuers(r: Reader, node: Node, path: string, publicUrl: string): AssertionIssuerConfig[] {
  const out: AssertionIssuerConfig[] = []
  const issuers = new UniqueSet(r, 'assertion issuer')
  for (const item of r.items(node, path) ?? []) {
    const m = r.map(item.node, item.path, ASSERTION_ISSUER_KEYS)
    if (m === undefined) continue
    const issuer = m.req('issuer', r.str({ check: checkProviderIssuer }))
    if (issuer !== undefined) issuers.add(issuer, m.get('issuer'), m.pathOf('issuer'))
    const kind = m.req('kind', r.oneOf(KINDS, { what: 'an assertion issuer kind' }), ' (`id-jag` or `workload`)')
    if (m.has('jwks') === m.has('jwks_uri')) {
      r.problem(m.node, m.pathOf('jwks_uri'), 'an assertion issuer needs its keys: `jwks_uri: https://...` or `jwks: { keys: [...] }`, exactly one of the two')
    }
    const jwksUri = m.maybe('jwks_uri', r.str({ check: checkProviderIssuer })) ?? null
    let jwks: JwkSetDocument | null = null
    const jwksNode = m.get('jwks')
    if (jwksNode !== undefined && !m.has('jwks_uri')) {
      const doc = r.plainMap(jwksNode, m.pathOf('jwks'))
      const problem = doc === undefined ? undefined : jwkSetProblem(doc)
      if (problem !== undefined) r.problem(jwksNode, m.pathOf('jwks'), problem)
      else if (doc !== undefined) jwks = doc as unknown as JwkSetDocument
    }
    const audience = m.opt('audience', r.str(), publicUrl)
    const algorithms = m.opt('algorithms', r.list(r.oneOf(ASSERTION_ALGS, { what: 'an asymmetric JWS algorithm' }), { nonEmpty: true }), [...ASSERTION_ALGS])

    const subjects: Record<string, string> = {}
    const subjectsNode = m.get('subjects')
    if (subjectsNode !== undefined) {
      for (const e of r.entries(subjectsNode, m.pathOf('subjects')) ?? []) {
        const clientId = r.str()(e.value, e.path)
        if (clientId !== undefined) subjects[e.key] = clientId
      }
    }
    if (kind === 'workload' && Object.keys(subjects).length === 0) {
      r.problem(
        subjectsNode ?? m.node,
        m.pathOf('subjects'),
        'a workload issuer maps the subjects it vouches for to clients: `subjects: { "system:serviceaccount:ns:sa": client-id }`',
      )
    }
    if (kind === 'id-jag' && subjectsNode !== undefined) {
      r.problem(
        subjectsNode,
        m.pathOf('subjects'),
        '`subjects` is for `kind: workload`; an ID-JAG names a person, found through identity_providers or `person`',
      )
    }
    const personNode = m.get('person')
    const person = personNode === undefined ? undefined : r.map(personNode, m.pathOf('person'), PERSON_KEYS)
    const personClaim = person?.req('claim', r.str()) ?? null
    if (kind === 'workload' && person !== undefined) r.problem(person.node, m.pathOf('person'), '`person` is for `kind: id-jag`')

    if (issuer === undefined || kind === undefined) continue
    out.push({ issuer, kind, jwksUri, jwks, audience, algorithms, subjects, personClaim, position: item.path })
  }
  return out
}
