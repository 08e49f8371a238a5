import { createHash } from 'node:crypto'
/**
 * Loading the YAML config: the one place that reads YAML. Parses with the
 * `yaml` Document API (node ranges + LineCounter) so every problem, syntax
 * errors included, carries file:line:col, the dotted key path and a reason.
 */
import { readFile } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { LineCounter, parseDocument, type YAMLError } from 'yaml'
import { ConfigError, type ConfigProblem } from '../errors.js'
import type { Env } from './env.js'
import { Reader } from './reader.js'
import type { Config } from './validated-config.js'
import { validateRoot } from './validate.js'

export type { Env } from './env.js'

/** What `bearward check-config` reports. */
export interface ConfigCheck {
  /** The validated config, or null when there are problems. */
  config: Config | null
  problems: ConfigProblem[]
  /** Usable but worth fixing: demo secrets, ephemeral key, shadowed routes. */
  warnings: ConfigProblem[]
}

/** The name used for configs that do not come from a file. */
export const INLINE = '<inline>'

export interface ParseOptions {
  /**
   * Check that files named in the config (keys, TLS, CA) exist. Default true;
   * tests that build configs in memory may turn it off.
   */
  checkFiles?: boolean
}

/**
 * Parse and validate config text. Never throws: problems and warnings come
 * back in the result. `file` is the name used in problems; relative paths in
 * the config (key files, TLS files) are resolved against its directory.
 */
export function inspectConfig(text: string, file: string, env: Env = process.env, options: ParseOptions = {}): ConfigCheck {
  const lineCounter = new LineCounter()
  const doc = parseDocument(text, {
    lineCounter,
    prettyErrors: false,
    merge: true,
    uniqueKeys: true,
    keepSourceTokens: false,
  })
  const syntax = doc.errors.map((e) => yamlProblem(file, lineCounter, e))
  const yamlWarnings = doc.warnings.map((e) => yamlProblem(file, lineCounter, e))
  // A document that did not parse is not validated: its structure is a guess,
  // and "missing key" noise would hide the real error. Duplicate keys parse fine.
  if (doc.errors.some((e) => e.code !== 'DUPLICATE_KEY')) {
    return { config: null, problems: syntax, warnings: yamlWarnings }
  }
  const absolute = file === INLINE ? INLINE : resolve(file)
  const baseDir = file === INLINE ? process.cwd() : dirname(absolute)
  const reader = new Reader({ doc, lineCounter, file, baseDir, env, checkFiles: options.checkFiles ?? true }, text)
  const result = validateRoot(reader, doc.contents ?? undefined, absolute)
  const problems = [...syntax, ...result.problems].sort(byPosition)
  return {
    config: problems.length === 0 ? result.config : null,
    problems,
    warnings: [...yamlWarnings, ...result.warnings].sort(byPosition),
  }
}

/**
 * Parse and validate config text; throws {@link ConfigError} carrying every
 * problem found.
 */
export function parseConfig(text: string, file: string = INLINE, env: Env = process.env, options: ParseOptions = {}): Config {
  const { config, problems } = inspectConfig(text, file, env, options)
  if (config === null) throw new ConfigError(problems)
  return config
}

/**
 * Read, parse and validate the config file at `path`; throws
 * {@link ConfigError} carrying every problem found.
 */
export async function loadConfigFile(path: string, env: Env = process.env): Promise<Config> {
  return (await loadConfigSnapshot(path, env)).config
}

/**
 * Load a config and the SHA-256 of the exact text it was built from, so a
 * file watcher can tell a later change from the content already in use.
 * Throws ConfigError like loadConfigFile.
 */
export async function loadConfigSnapshot(path: string, env: Env = process.env): Promise<ConfigSnapshot> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch {
    const { problems } = await checkConfig(path, env)
    throw new ConfigError(problems)
  }
  return snapshotOfText(text, path, env)
}

/** A validated config, the SHA-256 (hex) of the text it came from, and its warnings. */
export interface ConfigSnapshot {
  config: Config
  /** The text the config was built from (a primary hands it to its workers). */
  text: string
  digest: string
  warnings: ConfigProblem[]
}

/**
 * The snapshot of config text already read from `path` (a worker process
 * gets the text its primary read and checked, so every worker runs the same
 * bytes). Throws ConfigError like loadConfigFile.
 */
export function snapshotOfText(text: string, path: string, env: Env = process.env): ConfigSnapshot {
  const { config, problems, warnings } = inspectConfig(text, path, env)
  if (config === null) throw new ConfigError(problems)
  return { config, text, digest: createHash('sha256').update(text, 'utf8').digest('hex'), warnings }
}

/** `bearward check-config`: the config (or null), every problem and every warning. */
export async function checkConfig(path: string, env: Env = process.env): Promise<ConfigCheck> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : 'cannot be read'
    return { config: null, problems: [{ file: path, line: 1, col: 1, path: '', message: `cannot read the config file: ${reason}` }], warnings: [] }
  }
  return inspectConfig(text, path, env)
}

function yamlProblem(file: string, lineCounter: LineCounter, e: YAMLError): ConfigProblem {
  const { line, col } = e.pos[0] >= 0 ? lineCounter.linePos(e.pos[0]) : { line: 1, col: 1 }
  const message = e.code === 'DUPLICATE_KEY' ? 'duplicate key: each key may appear once in a mapping' : `YAML syntax: ${e.message}`
  return { file, line, col, path: '', message }
}

function byPosition(a: ConfigProblem, b: ConfigProblem): number {
  return a.line - b.line || a.col - b.col
}
