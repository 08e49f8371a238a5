/**
 * A bearward config as data: tests that start the binary build it as an
 * object, change it by key (or merge an override over it), and write it out
 * with the `yaml` package, so no test edits YAML text with a regex or a
 * string replace that silently does nothing when the text moves.
 */
import { parse, stringify } from 'yaml'

/** What a YAML config holds: maps, lists and scalars. */
export type ConfigValue = string | number | boolean | null | ConfigValue[] | ConfigTree

/** A YAML map. */
export interface ConfigTree {
  [key: string]: ConfigValue
}

function isTree(value: ConfigValue | undefined): value is ConfigTree {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * `base` with `override` merged over it, as a new tree: maps merge key by
 * key, anything else (a list, a scalar, a map replacing a scalar) replaces
 * what was there. Neither argument is changed.
 */
export function mergeConfig<T extends ConfigTree>(base: T, override: ConfigTree): T {
  const merged: ConfigTree = structuredClone(base)
  for (const [key, value] of Object.entries(override)) {
    const current = merged[key]
    merged[key] = isTree(current) && isTree(value) ? mergeConfig(current, value) : structuredClone(value)
  }
  return merged as T
}

/** A JSON object (a JWK, a document) as config data. */
export function jsonTree(value: object): ConfigTree {
  return JSON.parse(JSON.stringify(value)) as ConfigTree
}

/** The config as the YAML file bearward reads: long strings stay on one line, a map used twice is written twice (no anchors). */
export function configYaml(config: ConfigTree): string {
  return stringify(config, { lineWidth: 0, aliasDuplicateObjects: false })
}

/**
 * A piece of YAML a test wrote by hand (a flow map such as
 * `{ trusted_proxies: [127.0.0.1] }`, or indented list items), read into
 * data so it can be placed in a config by key.
 */
export function yamlValue(text: string): ConfigValue {
  return parse(text) as ConfigValue
}

/** {@link yamlValue} for a piece that must be a map. */
export function yamlTree(text: string): ConfigTree {
  const value = yamlValue(text)
  if (!isTree(value)) throw new Error(`expected a YAML map, got: ${text}`)
  return value
}

/** {@link yamlValue} for a piece that must be a list of maps (list items such as routes, clients, users); empty text is an empty list. */
export function yamlList(text: string): ConfigTree[] {
  const value = yamlValue(text) as ConfigValue | undefined
  if (value === null || value === undefined) return []
  if (!Array.isArray(value) || !value.every(isTree)) throw new Error(`expected a YAML list of maps, got: ${text}`)
  return value
}
