import type { Person } from '../claims.js'

/** What a page calls the signed-in person: their `name` claim when it is configured, else their username. */
export function displayName(user: Person): string {
  const name = user.claims.name
  return typeof name === 'string' && name.trim() !== '' ? name : user.username
}
