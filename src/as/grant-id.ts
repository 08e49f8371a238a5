import { createHash } from 'node:crypto'

/**
 * The grant a code produces has an id derived from the code's hash, so a
 * replay can revoke it without waiting for the first exchange to record it.
 */
export function grantIdForCode(codeHash: string): string {
  return createHash('sha256').update('grant:').update(codeHash).digest('base64url').slice(0, 22)
}
