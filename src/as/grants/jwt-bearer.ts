/**
 * grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer (RFC 7523 2.1) with
 * an Identity Assertion JWT Authorization Grant (ID-JAG) as the `assertion`:
 * the person's enterprise IdP vouches that this person, signed in there, lets
 * this client act for them at this server (MCP enterprise-managed
 * authorization).
 *
 * Checked, after the shared checks of `assertion-issuers.ts` (issuer of kind
 * id-jag, typ `oauth-id-jag+jwt`, signature, aud = our issuer, exp):
 * - `client_id` equals the authenticated client (an ID-JAG is for one client);
 * - `jti` present and single use (the store, so every instance refuses a replay);
 * - the person: `sub` at an `identity_providers` entry with the same issuer
 *   (the very `sub` a browser sign-in there gives, and that entry's `allowed`
 *   rules hold on the assertion's claims), else the issuer's `person.claim`
 *   matched to a local user (an `email` must not be `email_verified: false`);
 *   none is `invalid_grant`;
 * - scope: the request's `scope` (or, absent, the assertion's) within the
 *   assertion's `scope` claim when it has one, and within the client's scopes;
 *   the `resource` claim bounds the audience the same way.
 * The grant then starts as a code flow's would (startGrant): the same `sub`,
 * claims, account-page entry and grant id; `auth_time` is the assertion's
 * when it carries one, else its `iat`; `amr`, and `acr` through the identity
 * provider's `acr_values` (sign-in-strength.ts: an unmapped value spelt like
 * one of ours is left out). Under `mfa.required` or the client's
 * `require_mfa` the assertion must say the person used two factors (that
 * acr mapped to `mfa`/`phr`, or an amr with `mfa`), as a browser sign-in at
 * the provider must; else invalid_grant, before the jti is spent.
 *
 * Every refusal is 400 invalid_grant (ERR_INVALID_ASSERTION_GRANT) with its
 * cause in the log; scope and resource refusals are invalid_scope and
 * invalid_target as for every grant.
 *
 * @see https://www.rfc-editor.org/rfc/rfc7523#section-2.1
 * @see https://datatracker.ietf.org/doc/draft-ietf-oauth-identity-assertion-authz-grant/
 */
import { epochSeconds } from '../../clock.js'
import type { IdentityProviderConfig } from '../../config/validated-config.js'
import { InvalidAssertionGrant, InvalidScope, InvalidTarget } from '../../errors.js'
import { randomId } from '../../crypto/random.js'
import type { AsContext } from '../context.js'
import { startGrant } from '../issue.js'
import { requestedResource } from '../resource.js'
import { formatScope, parseScope, requireSubset } from '../scope.js'
import { checkAllowed, upstreamSubject } from '../identity-providers/person.js'
import type { VerifiedAssertion } from '../assertion-issuers.js'
import { singleUseJti, useJtiOnce } from '../jwt-assertion.js'
import type { Grant, GrantRequest, TokenResponse } from './grant-handler.js'
import { twoFactorSignIn, upstreamSignIn } from '../sign-in-strength.js'
import { mfaRequiredFor } from '../interaction/authorization-steps.js'

export const JWT_BEARER_GRANT = 'urn:ietf:params:oauth:grant-type:jwt-bearer'

function refuse(cause: string): InvalidAssertionGrant {
  return new InvalidAssertionGrant({ cause: `id-jag: ${cause}` })
}

/** A claim that may be one string or a list of strings, as a list; undefined when absent or malformed. */
function stringList(value: unknown): string[] | undefined {
  if (typeof value === 'string') return [value]
  if (Array.isArray(value) && value.every((v): v is string => typeof v === 'string')) return value
  return undefined
}

/** An issuer without an identity provider entry maps no acr value to ours. */
const NO_ACR_MAPPING: Readonly<Record<string, string>> = Object.freeze({})

/** The identity provider with the assertion's issuer, when there is one. */
function providerOf(as: AsContext, verified: VerifiedAssertion): IdentityProviderConfig | undefined {
  return as.as.identityProviders.find((p) => p.issuer === verified.issuer.issuer)
}

/** The bearward `sub` of the person the assertion names, or a refusal. */
function personOf(as: AsContext, verified: VerifiedAssertion): string {
  const { issuer, claims } = verified
  const provider = providerOf(as, verified)
  if (provider !== undefined) {
    const verdict = checkAllowed(provider.allowed, claims)
    if (!verdict.allowed) throw refuse(`person not allowed by identity provider ${provider.id}: ${verdict.reason}`)
    const sub = upstreamSubject(provider.id, claims.sub)
    if (sub === null) throw refuse('sub is not printable ASCII of at most 255 characters')
    return sub
  }
  const claim = issuer.personClaim
  if (claim === null) throw refuse('unmapped subject: no identity provider has this issuer and no person claim is configured')
  const value = claims[claim]
  if (typeof value !== 'string' || value === '') throw refuse(`unmapped subject: no ${claim} claim`)
  if (claim === 'email' && claims.email_verified === false) throw refuse('unmapped subject: email not verified')
  for (const user of as.users.values()) if (user.claims[claim] === value) return user.sub
  throw refuse(`unmapped subject: no user with this ${claim}`)
}

export const jwtBearerGrant: Grant = {
  params: ['assertion', 'scope', 'resource'],

  async handle({ form, client, as, dpop, mtls }: GrantRequest): Promise<TokenResponse> {
    const assertion = form.require('assertion')
    const verified = await as.assertionIssuers.verify(assertion, 'id-jag', refuse)
    const { claims } = verified
    if (claims.client_id !== client.clientId) throw refuse('client mismatch: client_id claim is not the authenticated client')
    const jti = singleUseJti(claims, refuse)
    const sub = personOf(as, verified)

    // Scope: never beyond the assertion's scope claim (when it has one), nor beyond the client's registration.
    const bound = claims.scope === undefined ? undefined : typeof claims.scope === 'string' ? parseScope(claims.scope) : null
    if (bound === null) throw refuse('scope claim is not a string')
    const requested = parseScope(form.get('scope'))
    const wanted = requested.length > 0 ? requested : (bound ?? client.scopes)
    if (bound !== undefined) requireSubset(wanted, bound, 'what the assertion grants')
    const scope = formatScope(wanted.filter((s) => client.scopes.includes(s)))
    requireSubset(requested, client.scopes, 'what the client is registered for')
    // An assertion whose scope the client may use none of grants nothing: a token without scope is no answer.
    if (scope === '') throw new InvalidScope('None of the scope the assertion grants is available to this client')

    // Resource: the request's, within the assertion's resource claim; else the claim's only one; else this server.
    const resources = claims.resource === undefined ? undefined : stringList(claims.resource)
    if (resources === null) throw refuse('resource claim malformed')
    const asked = requestedResource(form, as)
    if (asked !== null && resources !== undefined && !resources.includes(asked)) {
      throw new InvalidTarget('The resource is not one the assertion grants', { cause: 'resource outside the ID-JAG resource claim' })
    }
    let audience = asked ?? as.issuer
    if (asked === null && resources !== undefined) {
      if (resources.length !== 1 || !as.resources.has(resources[0] as string)) {
        throw new InvalidTarget('Name the resource: the assertion grants several, or one this server does not know', {
          cause: 'ID-JAG resource claim ambiguous',
        })
      }
      audience = resources[0] as string
    }

    // The IdP's word on how the person signed in, as for an upstream sign-in (ID-JAG carries acr/amr): its acr
    // counts as ours only through the `acr_values` of the identity provider with the same issuer.
    const strength = upstreamSignIn(claims, providerOf(as, verified)?.acrValues ?? NO_ACR_MAPPING)
    // An ID-JAG starts an authorization as a browser sign-in at the provider does: the same two-factor rule.
    if (mfaRequiredFor(as, client) && !twoFactorSignIn(strength)) {
      throw refuse("two factors required (mfa.required or the client's require_mfa), and the assertion does not say the person used them")
    }

    // Single use, recorded last: a refused request does not burn the assertion.
    const timing = { clock: as.clock, skewSec: as.config.gateway.clockSkewSec }
    if (!(await useJtiOnce(as.store, 'id-jag', verified.issuer.issuer, jti, verified.usableUntil, timing))) throw refuse('jti replayed')

    const now = epochSeconds(as.clock)

    const authTime = typeof claims.auth_time === 'number' ? claims.auth_time : typeof claims.iat === 'number' ? claims.iat : now
    return startGrant(as, {
      grant: 'jwt_bearer',
      client,
      grantId: randomId(),
      sub,
      scope,
      authTime,
      strength,
      resource: audience === as.issuer ? null : audience,
      audience,
      nonce: null,
      jkt: dpop?.jkt ?? null,
      x5t: mtls?.x5t ?? null,
    })
  },
}
