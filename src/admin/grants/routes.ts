/** /admin/v1/grants and /admin/v1/tokens/revoke. */
import type { AdminRoute } from '../router.js'

export const GRANT_ROUTES: readonly AdminRoute[] = []
