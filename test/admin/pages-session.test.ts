import t from 'tap'
import { freshSecondFactor, PAGES_MAX_AGE_SEC } from '../../src/admin/pages/session.js'

/**
 * What the admin pages accept as a sign-in (src/admin/pages/session.ts):
 * `acr` mfa (or better) no older than PAGES_MAX_AGE_SEC. Anything else is
 * sent back to /authorize (acr_values=mfa, max_age), the step-up.
 */

const NOW = 1_800_000_000

t.test('a sign-in older than max_age or without a second factor is not fresh', async (t) => {
  t.ok(freshSecondFactor({ acr: 'mfa', authTime: NOW - 10 }, NOW), 'mfa, ten seconds ago: fresh')
  t.ok(freshSecondFactor({ acr: 'mfa', authTime: NOW - PAGES_MAX_AGE_SEC }, NOW), 'mfa, exactly max_age ago: still fresh')
  t.notOk(freshSecondFactor({ acr: 'mfa', authTime: NOW - PAGES_MAX_AGE_SEC - 1 }, NOW), 'mfa, one second past max_age: stale')
  t.notOk(freshSecondFactor({ acr: 'pwd', authTime: NOW }, NOW), 'a password only, just now: no second factor')
  t.notOk(freshSecondFactor({ authTime: NOW }, NOW), 'no acr at all')
  t.notOk(freshSecondFactor({ acr: 'mfa', authTime: null }, NOW), 'no sign-in time (a client’s own token)')
  t.ok(freshSecondFactor({ acr: 'phr', authTime: NOW - 1 }, NOW), 'a passkey (phr) is more than mfa: fresh')
})
