/** Flat `[name, value, name, value, ...]` list, the form undici takes and Node's rawHeaders uses. */
export type FlatHeaders = string[]

/** A flat list as `[name, value]` pairs, the form `res.addTrailers` takes for repeats. */
export function headerPairs(flat: FlatHeaders): [string, string][] {
  const pairs: [string, string][] = []
  for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i] as string, flat[i + 1] as string])
  return pairs
}

/**
 * A flat header list as an object for node:http / http-proxy (the WebSocket
 * path): lower-case names; repeated Cookie values joined with `; ` (RFC 6265
 * 5.4 allows one Cookie line), other repeats kept as arrays.
 */
export function headerObject(flat: FlatHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (let i = 0; i < flat.length; i += 2) {
    const name = (flat[i] as string).toLowerCase()
    const value = flat[i + 1] as string
    const prev = out[name]
    if (prev === undefined) out[name] = value
    else if (name === 'cookie') out[name] = `${prev as string}; ${value}`
    else if (Array.isArray(prev)) prev.push(value)
    else out[name] = [prev, value]
  }
  return out
}
