/**
 * Redis key names. Every key is `prefix kind:{tag}rest`: the tag in braces is
 * what Redis Cluster hashes, so keys one script touches share it. Every
 * variable part is percent-encoded so it can hold no brace. The names are a
 * contract with data written by earlier versions (rolling upgrades): never
 * change one.
 */

/** Percent-encode a key part, so it cannot contain `{`/`}` (hash tags) or `:`. */
export function part(value: string): string {
  return encodeURIComponent(value)
}

/** `prefix kind:{tag}rest`. */
export function keyOf(prefix: string, kind: string, tag: string, rest = ''): string {
  return `${prefix}${kind}:{${part(tag)}}${rest}`
}
