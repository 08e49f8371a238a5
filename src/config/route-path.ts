/**
 * Route prefixes must already be in the normalized form the gateway matches
 * on (the gateway forwards the normalized path, so a policy written against a
 * non-normalized path could never match what it is meant to protect).
 */

/** The normalized form of a path prefix (best effort), for suggestions. */
export function normalizePathPrefix(path: string): string {
  let p = path
    .replace(/%2[fF]/g, '/')
    .replace(/%2[eE]/g, '.')
    .replace(/\\/g, '/')
  const out: string[] = []
  for (const segment of p.split('/')) {
    if (segment === '' || segment === '.') continue
    if (segment === '..') out.pop()
    else out.push(segment)
  }
  p = '/' + out.join('/')
  return p
}

/** A reason the prefix is not normalized, or undefined when it is. */
export function checkRoutePath(path: string): string | undefined {
  const fix = (): string => {
    const normalized = normalizePathPrefix(path)
    return normalized === path ? '' : `; write \`${normalized}\``
  }
  if (!path.startsWith('/')) return `a route path must start with \`/\`; write \`${normalizePathPrefix('/' + path)}\``
  if (/[?#]/.test(path)) return 'a route path is a path prefix only: no `?query` or `#fragment`'
  if (/[\s\x00-\x1f\x7f]/.test(path)) return 'a route path must not contain spaces or control characters'
  if (path.includes('\\')) return `a route path must not contain \`\\\`${fix()}`
  if (/%2[fF]/.test(path)) return `a route path must not contain an encoded slash \`%2f\`${fix()}`
  if (/%2[eE]/.test(path)) return `a route path must not contain an encoded dot \`%2e\`${fix()}`
  if (/%5[cC]/.test(path)) return 'a route path must not contain an encoded backslash `%5c`'
  if (/%(?![0-9A-Fa-f]{2})/.test(path)) return 'a route path has a `%` that is not followed by two hex digits'
  if (path.length > 1 && path.endsWith('/')) return `a route path has no trailing slash (prefixes match on segment boundaries)${fix()}`
  if (path.includes('//')) return `a route path must not contain \`//\`${fix()}`
  if (path.split('/').some((s) => s === '.' || s === '..')) return `a route path must not contain \`.\` or \`..\` segments${fix()}`
  return undefined
}
