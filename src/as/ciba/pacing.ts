/**
 * How fast a client may poll /token with an auth_req_id (OpenID CIBA Core 1.0 11, which takes
 * RFC 8628 3.5's rule): a poll sooner than `interval` after the last answered one is `slow_down`,
 * and every slow_down adds 5 seconds to the interval for the rest of the request's life.
 *
 * Kept beside the approval, in families every instance shares: the time of the last answered poll
 * is a single-use key living `interval` seconds (set-if-absent: of two racing polls one is
 * answered), the count of slow_downs a counter living as long as the request. Both keys are named
 * by the approval's binding, a hash: nothing of the auth_req_id is stored.
 */
import { SlowDown } from '../../errors.js'
import type { Store } from '../../store/types.js'

/** RFC 8628 3.5: what each slow_down adds to the interval. */
export const SLOW_DOWN_STEP_SEC = 5

/**
 * Resolves when the poll may be answered; `slow_down` when it came too soon (and the interval grows).
 * @see https://openid.net/specs/openid-client-initiated-backchannel-authentication-core-1_0.html#rfc.section.11
 */
export async function pacePoll(store: Pick<Store, 'rateLimits' | 'singleUse'>, binding: string, baseIntervalSec: number, lifetimeSec: number): Promise<void> {
  const slowKey = `ciba:slow:${binding}`
  const slowDowns = await store.rateLimits.count(slowKey)
  if (await store.singleUse.use(`ciba:poll:${binding}`, baseIntervalSec + SLOW_DOWN_STEP_SEC * slowDowns)) return
  await store.rateLimits.hit(slowKey, Math.max(1, lifetimeSec))
  throw new SlowDown()
}
