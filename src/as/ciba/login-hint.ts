/**
 * Whom a backchannel authentication request is for (OpenID CIBA Core 1.0 7.1): exactly one hint.
 *
 * - `login_hint`: a username of a local person (YAML or admin API; a disabled one is unknown), the
 *   email of exactly one YAML person (case-insensitive; an email two people share names nobody), or
 *   the bearward `sub` of a person who signed in through a configured identity provider
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
export async function personOfHint(as: AsContext, form: FormParams, clientId: string, emails: ReadonlyMap<string, readonly string[]>): Promise<string> {
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
  const named = emails.get(hint.toLowerCase())
  if (named?.length === 1 && named[0] !== undefined) {
    const byEmail = await as.people.byUsername(named[0])
    if (byEmail !== undefined) return byEmail.sub
  }
  // A federated person is known by the sub bearward gave them; the store keeps them while they sign in.
  if (providerOfSubject(hint, as.upstream) !== null && (await as.store.upstream.getPerson(hint)) !== null) return hint
  throw new UnknownUserId(undefined, { cause: 'login_hint names nobody known' })
}
