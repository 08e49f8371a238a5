import type { Node } from 'yaml'

/** Reads one value at `path`; undefined when refused (problem recorded). */
export type Read<T> = (node: Node, path: string) => T | undefined

/** A value with the node and path it was read from. */
export interface Located<T> {
  value: T
  node: Node
  path: string
}
