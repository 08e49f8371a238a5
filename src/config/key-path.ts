/** The dotted key paths config problems name: `routes[2].match.path`. */

/** `parent.key`, or `parent["odd key"]` when the key would not read as one word. */
export function childPath(parent: string, key: string): string {
  if (/^[A-Za-z0-9_:*+-]+$/.test(key)) return parent === '' ? key : `${parent}.${key}`
  return `${parent}[${JSON.stringify(key)}]`
}

export function itemPath(parent: string, index: number): string {
  return `${parent}[${index}]`
}
