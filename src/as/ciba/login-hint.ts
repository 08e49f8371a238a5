/**
 * Whom a backchannel authentication request is for (OpenID CIBA Core 1.0 7.1): exactly one hint.
 *
 * - `login_hint`: a username of a local person (YAML or admin API; a disabled one is unknown), the
 *   email of exactly one person (case-insensitive): YAML, created through the admin API, or signed
 *   in through a configured identity provider and still remembered by the store, read on every
 *   instance; an email two people share names nobody, nor does one whose claims say
 *   `email_verified: false` (anyone can type an address at an upstream's sign-up), or the bearward
 *   `sub` of a person who signed in through a configured identity provider
 *   (`<provider id>:<upstream sub>`) and whom the store still remembers.
 * - `id_token_hint`: an ID token this server issued to this very client (signature, issuer; its
 *   expiry does not matter, as at logout); its `sub` must still be someone bearward knows.
 * - `login_hint_token` is not supported (invalid_request).
 *
 * Anything that names nobody is `unknown_user_id` (CIBA 13), without saying which part failed.
 */
import { InvalidRequest, UnknownUserId } from '../../errors.js'
import type { FormParams } from '../../http/body.js'
import { findPersonBySub } from '../claims.js'
import type { AsContext } from '../context.js'
import { providerOfSubject } from '../identity-providers/person.js'
import { verifyIdTokenHint } from '../interaction/id-token-hint.js'

/** The longest login_hint worth looking up (a username, an email or an upstream sub). */
const MAX_LOGIN_HINT = 320

/**
 * The `sub` of the person the request's hint names, for the authenticated client `clientId`.
 * @see https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html#rfc.section.7.1
 */
export async function personOfHint(as: AsContext, form: FormParams, clientId: string): Promise<string> {
  if (form.has('login_hint_token')) throw new InvalidRequest('login_hint_token is not supported: send login_hint or id_token_hint')
  const loginHint = form.get('login_hint')
  const idTokenHint = form.get('id_token_hint')
  if ((loginHint === undefined) === (idTokenHint === undefined)) throw new InvalidRequest('Send exactly one of login_hint and id_token_hint')
  if (idTokenHint !== undefined) {
    const hint = await verifyIdTokenHint(as, idTokenHint)
    if (hint === null) throw new UnknownUserId(undefined, { cause: 'id_token_hint is not an ID token of this issuer' })
    // CIBA 7.1: an ID token "previously issued to the Client": another client's says nothing of what this one may ask.
    if (!hint.audiences.includes(clientId)) throw new UnknownUserId(undefined, { cause: 'id_token_hint was issued to another client' })
    if ((await findPersonBySub(as, hint.sub)) === undefined) throw new UnknownUserId(undefined, { cause: 'id_token_hint names a person no longer known' })
    return hint.sub
  }
  const hint = loginHint as string
  if (hint === '' || hint.length > MAX_LOGIN_HINT) throw new UnknownUserId(undefined, { cause: 'login_hint empty or too long' })
  const byName = await as.people.byUsername(hint)
  if (byName !== undefined) return byName.sub
  if (hint.includes('@')) {
    const sub = await personOfEmail(as, hint)
    if (sub !== undefined) return sub
  }
  // A federated person is known by the sub bearward gave them; the store keeps them while they sign in.
  if (providerOfSubject(hint, as.upstream) !== null && (await as.store.upstream.getPerson(hint)) !== null) return hint
  throw new UnknownUserId(undefined, { cause: 'login_hint names nobody known' })
}

/**
 * The one person whose email `email` is, among local and federated people; undefined when nobody
 * or more than one holds it, or the one holder is disabled.
 */
async function personOfEmail(as: AsContext, email: string): Promise<string | undefined> {
  const [local, federated] = await Promise.all([as.people.subsWithEmail(email), as.store.upstream.subsByEmail(email)])
  const known = federated.filter((sub) => providerOfSubject(sub, as.upstream) !== null)
  const holders = [...new Set([...local, ...(await verifiedFederated(as, known))])]
  if (holders.length !== 1 || holders[0] === undefined) return undefined
  const sub = holders[0]
  if (local.includes(sub)) return (await as.people.bySub(sub))?.sub
  return sub
}

/** The federated people whose upstream did not say their email is unverified. */
async function verifiedFederated(as: AsContext, subs: readonly string[]): Promise<string[]> {
  const out: string[] = []
  for (const sub of subs) if ((await as.store.upstream.getPerson(sub))?.claims.email_verified !== false) out.push(sub)
  return out
}
