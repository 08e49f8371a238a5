/** `components/schemas` of the grants and tokens endpoints. */
type Json = Record<string, unknown>

export const GRANT_SCHEMAS: Record<string, Json> = {}
