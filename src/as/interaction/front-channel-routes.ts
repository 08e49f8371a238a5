import type { AsHandler } from '../context.js'
import type { FrontChannelPath } from '../../config/own-paths.js'
import { authorize } from '../authorize.js'
import { account } from './account.js'
import { approve } from './approve-page.js'
import { passkeyScript, stylesheet } from './assets.js'
import { consent } from './consent.js'
import { device } from './device-page.js'
import { login } from './login.js'
import { logout } from './logout.js'
import { passkeyLogin, passkeyOptions, passkeys } from './passkeys.js'
import { secondFactor } from './second-factor.js'
import { setPassword } from './set-password.js'
import { totp } from './totp.js'
import { upstreamStart } from '../identity-providers/start.js'

/**
 * The authorization server's front channel: every path a browser visits,
 * mapped by exact path (relative to public_url) to its handler. The AS router
 * (src/as/server.ts) dispatches here. Each handler checks its own method (405
 * with Allow) and answers with HTML pages or redirects, never JSON.
 */
export const frontChannelRoutes: ReadonlyMap<string, AsHandler> = new Map<string, AsHandler>(
  // Typed as own-paths.ts's list, so a page is added there (where config load sees it) or not at all.
  Object.entries({
    '/authorize': authorize,
    '/login': login,
    '/upstream-login': upstreamStart,
    '/consent': consent,
    '/logout': logout,
    '/account': account,
    '/device': device,
    '/assets/bearward.css': stylesheet,
    '/passkey-options': passkeyOptions,
    '/passkeys': passkeys,
    '/passkey-login': passkeyLogin,
    '/assets/passkeys.js': passkeyScript,
    '/second-factor': secondFactor,
    '/totp': totp,
    '/set-password': setPassword,
    '/approve': approve,
  } satisfies Record<FrontChannelPath, AsHandler>),
)
