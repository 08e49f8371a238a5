/**
 * The one person lookup of the sign-in pages, sessions, passkeys and
 * claims: the YAML `users` and the people managed through the admin API
 * (store family `people`) behind one door, so a disabled person is refused
 * by every path at once and on every instance (the flag is in the store).
 *
 * A username held by both is never answered by either (a warning is
 * logged): the load and the admin API refuse that state, and a lookup that
 * finds it anyway (a person created on another instance before a reload
 * added the same YAML user) must not let one shadow the other.
 */
import type { UserConfig } from '../../config/validated-config.js'
import type { PeopleStore, PersonRecord } from '../../store/types.js'
import { emailKey, emailKeyOf } from '../../store/people/types.js'
import type { Person } from './person.js'
import { configUserBySub } from './config-users.js'

/** Someone who signs in on the sign-in page with a password, a passkey or a second factor. */
export interface LocalPerson extends Person {
  /** Null for a person created through the admin API who has not set a password yet. */
  readonly passwordHash: string | null
  /** `config`: a YAML user; `admin`: created through the admin API. */
  readonly source: 'config' | 'admin'
}

interface DirectoryLog {
  warn(obj: object, msg: string): void
}

export class PersonDirectory {
  readonly #users: ReadonlyMap<string, UserConfig>
  readonly #store: PeopleStore
  readonly #log: DirectoryLog
  /**
   * Whether the store holds people and flags at all: only the admin API
   * creates people and disables them, so with it off every lookup is the
   * YAML list alone and a sign-in or /token costs no store read.
   */
  readonly #managed: boolean
  /** YAML people's subs by their lower-cased email (built once: the list changes only with a reload). */
  readonly #configEmails = new Map<string, string[]>()

  constructor(users: ReadonlyMap<string, UserConfig>, store: PeopleStore, log: DirectoryLog, managed = true) {
    this.#users = users
    this.#store = store
    this.#log = log
    this.#managed = managed
    for (const u of users.values()) {
      const email = emailKeyOf(u.claims)
      if (email !== null && u.claims.email_verified !== false) this.#configEmails.set(email, [...(this.#configEmails.get(email) ?? []), u.sub])
    }
  }

  /**
   * The subs of every local person whose `email` claim is `email` (compared lower-cased), disabled
   * ones too (they still hold it): YAML people, and people created through the admin API on every
   * instance. An email a person's claims mark `email_verified: false` is not theirs to be found by.
   */
  async subsWithEmail(email: string): Promise<string[]> {
    const key = emailKey(email)
    const yaml = this.#configEmails.get(key) ?? []
    if (!this.#managed) return [...yaml]
    const stored = (await this.#store.byEmail(key)).filter((r) => r.claims.email_verified !== false).map((r) => r.sub)
    return [...new Set([...yaml, ...stored])]
  }

  /** The YAML user of this name, whatever the store says (for the admin API's listing). */
  configUser(username: string): UserConfig | undefined {
    return this.#users.get(username)
  }

  /** The YAML users, in config order. */
  configUsers(): IterableIterator<UserConfig> {
    return this.#users.values()
  }

  /** The person who may sign in as `username`: undefined when unknown, disabled, or ambiguous. Rejects with StoreUnavailableError. */
  async byUsername(username: string): Promise<LocalPerson | undefined> {
    const yaml = this.#users.get(username)
    if (!this.#managed) return yaml === undefined ? undefined : fromConfig(yaml)
    if (yaml === undefined) {
      const record = await this.#store.get(username)
      return record === null || record.disabled ? undefined : fromRecord(record)
    }
    const [disabled, shadow] = await Promise.all([this.#store.configDisabled(username), this.#store.get(username)])
    if (shadow !== null) {
      this.#log.warn({ event: 'person_ambiguous', username }, 'a username is both in the config `users` and created through the admin API: neither signs in')
      return undefined
    }
    return disabled ? undefined : fromConfig(yaml)
  }

  /** The person whose `sub` this is, as {@link byUsername} would answer. */
  async bySub(sub: string): Promise<LocalPerson | undefined> {
    const yaml = configUserBySub(this.#users, sub)
    if (yaml !== undefined) return this.byUsername(yaml.username)
    if (!this.#managed) return undefined
    const record = await this.#store.bySub(sub)
    if (record === null) return undefined
    // Through byUsername: the same refusals (disabled, a YAML user of the same name).
    const person = await this.byUsername(record.username)
    return person?.sub === sub ? person : undefined
  }
}

function fromConfig(u: UserConfig): LocalPerson {
  return { username: u.username, sub: u.sub, claims: u.claims, passwordHash: u.passwordHash, source: 'config' }
}

function fromRecord(r: PersonRecord): LocalPerson {
  return { username: r.username, sub: r.sub, claims: r.claims, passwordHash: r.passwordHash, source: 'admin' }
}

/**
 * At load: the YAML users whose username or sub a person created through
 * the admin API already holds (never silently shadowed: the load is
 * refused, naming both). Empty when the store cannot be asked; the lookup
 * refuses the ambiguous username then (see PersonDirectory.byUsername).
 */
export async function overlapsWithStore(users: readonly UserConfig[], store: PeopleStore): Promise<Array<{ index: number; message: string }>> {
  const found: Array<{ index: number; message: string }> = []
  for (const [index, u] of users.entries()) {
    const [byName, bySub] = await Promise.all([store.get(u.username), store.bySub(u.sub)])
    if (byName !== null) found.push({ index, message: `username ${u.username} is also a person created through the admin API: delete one of them` })
    else if (bySub !== null)
      found.push({ index, message: `sub ${u.sub} is also the sub of ${bySub.username}, created through the admin API: delete one of them` })
  }
  return found
}
