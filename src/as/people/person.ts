/**
 * Someone who can sign in: a configured user, or a person known through an
 * upstream identity provider (whose `username` is their `sub`).
 */
export interface Person {
  username: string
  sub: string
  claims: Readonly<Record<string, unknown>>
}
