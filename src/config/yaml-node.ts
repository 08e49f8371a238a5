import { isMap, isScalar, isSeq, Scalar, type Node } from 'yaml'

/** What a node holds, in the words of a problem: `expected a list, got a mapping`. */
export function kindOf(node: Node | undefined, value?: unknown): string {
  if (isMap(node)) return 'a mapping'
  if (isSeq(node)) return 'a list'
  const v = value !== undefined ? value : isScalar(node) ? node.value : undefined
  if (v === null || v === undefined) return 'an empty value'
  if (typeof v === 'string') return 'a string'
  if (typeof v === 'number') return Number.isInteger(v) ? 'a number' : 'a decimal number'
  if (typeof v === 'boolean') return `\`${String(v)}\``
  return 'an unsupported value'
}

/** An empty value standing in for a missing one (`key:` with nothing after). */
export function nullAt(near: Node | undefined): Node {
  const s = new Scalar(null)
  if (near?.range) s.range = [near.range[1], near.range[1], near.range[1]]
  return s
}
