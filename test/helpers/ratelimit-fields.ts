/**
 * A strict reader of the RateLimit-Policy and RateLimit fields, written from
 * draft-ietf-httpapi-ratelimit-headers-11 (sections 2 and 3) and the
 * Structured Fields parsing algorithms of RFC 9651 (4.2.1 List, 4.2.3 Item,
 * 4.2.3.2 Parameters, 4.2.4 Integer, 4.2.5 String, 4.2.6 Token), so a test
 * reads the fields as a client following the draft would: anything that does
 * not parse throws.
 */

export type BareItem = number | string | boolean | { token: string }

export interface SfItem {
  readonly value: BareItem
  readonly params: ReadonlyMap<string, BareItem>
}

class Input {
  i = 0
  constructor(readonly s: string) {}
  get done(): boolean {
    return this.i >= this.s.length
  }
  peek(): string {
    return this.s[this.i] ?? ''
  }
  fail(why: string): never {
    throw new Error(`structured field: ${why} at ${this.i} in ${JSON.stringify(this.s)}`)
  }
  sp(): void {
    while (this.peek() === ' ') this.i++
  }
  ows(): void {
    while (this.peek() === ' ' || this.peek() === '\t') this.i++
  }
}

function integer(input: Input): number {
  const m = /^-?[0-9]{1,15}/.exec(input.s.slice(input.i))
  if (m === null) return input.fail('expected an integer')
  if (/^[.0-9]/.test(input.s.slice(input.i + m[0].length))) input.fail('decimals and integers over 15 digits are not Integers')
  input.i += m[0].length
  return Number(m[0])
}

function string(input: Input): string {
  if (input.peek() !== '"') input.fail('expected "')
  input.i++
  let out = ''
  for (;;) {
    if (input.done) input.fail('unterminated string')
    const c = input.peek()
    input.i++
    if (c === '\\') {
      const next = input.peek()
      if (next !== '"' && next !== '\\') input.fail('bad escape')
      out += next
      input.i++
    } else if (c === '"') {
      return out
    } else {
      const code = c.charCodeAt(0)
      if (code < 0x20 || code > 0x7e) input.fail('a string holds printable ASCII only')
      out += c
    }
  }
}

function bareItem(input: Input): BareItem {
  const c = input.peek()
  if (c === '-' || (c >= '0' && c <= '9')) return integer(input)
  if (c === '"') return string(input)
  if (c === '?') {
    input.i++
    const b = input.peek()
    if (b !== '0' && b !== '1') input.fail('bad boolean')
    input.i++
    return b === '1'
  }
  const m = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*/.exec(input.s.slice(input.i))
  if (m === null) return input.fail('expected a bare item')
  input.i += m[0].length
  return { token: m[0] }
}

function params(input: Input): Map<string, BareItem> {
  const out = new Map<string, BareItem>()
  while (input.peek() === ';') {
    input.i++
    input.sp()
    const m = /^[a-z*][a-z0-9_\-.*]*/.exec(input.s.slice(input.i))
    if (m === null) input.fail('expected a parameter key')
    input.i += m[0].length
    let value: BareItem = true
    if (input.peek() === '=') {
      input.i++
      value = bareItem(input)
    }
    out.set(m[0], value)
  }
  return out
}

/** RFC 9651 4.2.1: a List of Items (no Inner Lists: the draft uses none). */
export function parseList(text: string): SfItem[] {
  const input = new Input(text)
  input.sp()
  const out: SfItem[] = []
  while (!input.done) {
    const value = bareItem(input)
    out.push({ value, params: params(input) })
    input.ows()
    if (input.done) break
    if (input.peek() !== ',') input.fail('expected ,')
    input.i++
    input.ows()
    if (input.done) input.fail('trailing comma')
  }
  return out
}

export interface Policy {
  readonly name: string
  /** `q`: quota units (required, Integer). */
  readonly q: number
  /** `w`: window, seconds (Integer), when given. */
  readonly w: number | undefined
}

export interface PolicyState {
  readonly name: string
  /** `r`: remaining units (required, Integer). */
  readonly r: number
  /** `t`: seconds until the quota resets (Integer), when given. */
  readonly t: number | undefined
}

function nameOf(item: SfItem, field: string): string {
  if (typeof item.value !== 'string') throw new Error(`${field}: an item is a String naming the policy`)
  return item.value
}

function int(item: SfItem, key: string, field: string, required: boolean): number | undefined {
  const v = item.params.get(key)
  if (v === undefined && !required) return undefined
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new Error(`${field}: \`${key}\` must be an Integer`)
  if (v < 0) throw new Error(`${field}: \`${key}\` must not be negative`)
  return v
}

/** The draft's RateLimit-Policy (section 2): each item a named policy with `q`, optionally `w`. */
export function parsePolicies(text: string): Policy[] {
  return parseList(text).map((item) => ({
    name: nameOf(item, 'RateLimit-Policy'),
    q: int(item, 'q', 'RateLimit-Policy', true) as number,
    w: int(item, 'w', 'RateLimit-Policy', false),
  }))
}

/** The draft's RateLimit (section 3): each item a named policy's state, `r` and optionally `t`. */
export function parseStates(text: string): PolicyState[] {
  return parseList(text).map((item) => ({
    name: nameOf(item, 'RateLimit'),
    r: int(item, 'r', 'RateLimit', true) as number,
    t: int(item, 't', 'RateLimit', false),
  }))
}

/** Both fields of one answer, every state naming a policy the answer announces (draft section 3). */
export function readRateLimitFields(headers: Record<string, string | string[] | undefined>): { policies: Policy[]; states: Map<string, PolicyState> } {
  const policy = headers['ratelimit-policy']
  const state = headers.ratelimit
  if (typeof policy !== 'string' || typeof state !== 'string') throw new Error('RateLimit-Policy and RateLimit: one line each expected')
  const policies = parsePolicies(policy)
  const states = new Map(parseStates(state).map((s) => [s.name, s]))
  for (const name of states.keys()) if (!policies.some((p) => p.name === name)) throw new Error(`RateLimit names a policy RateLimit-Policy does not: ${name}`)
  return { policies, states }
}
