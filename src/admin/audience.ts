import { ADMIN_API_BASE } from '../config/sections/admin-api.js'

/** The `aud` an admin API token must carry: `{public_url}/admin/v1`, wherever the API is served. */
export function adminAudience(publicUrl: string): string {
  return `${publicUrl}${ADMIN_API_BASE}`
}
