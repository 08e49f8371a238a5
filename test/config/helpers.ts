/** Shared helpers for the config tests. */
import { inspectConfig, type ConfigCheck } from '../../src/config/load.js'
import type { ConfigProblem } from '../../src/errors.js'
import type { Env } from '../../src/config/env.js'

/** Inspect inline YAML as if it were `config.yaml` in the fixtures directory. */
export function inspect(yaml: string, env: Env = {}): ConfigCheck {
  return inspectConfig(yaml, 'test/fixtures/config/good/inline.yaml', env)
}

/** The problems at `path` (exact dotted path). */
export function at(problems: readonly ConfigProblem[], path: string): ConfigProblem[] {
  return problems.filter((p) => p.path === path)
}

/** One line per problem, `line:col path | message`, for readable failure output. */
export function describe(problems: readonly ConfigProblem[]): string {
  return problems.map((p) => `${p.line}:${p.col} ${p.path} | ${p.message}`).join('\n')
}

/** A valid secret hash shape (not the hash of anything). */
export const HASH = 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'
