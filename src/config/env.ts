/**
 * `${VAR}` and `${VAR:-default}` in string values, read from the environment.
 * Substitution runs on one scalar at a time, after YAML parsing, so a value can
 * never inject YAML structure and every problem keeps its own position.
 *
 * - `${VAR}`            the variable's value; an error when VAR is unset
 * - `${VAR:-default}`   the default when VAR is unset or empty (as in sh)
 * - `$${`               a literal `${`
 */

export type Env = Readonly<Record<string, string | undefined>>

export interface EnvProblem {
  /** Offset of the offending `${` in the input string. */
  index: number
  message: string
}

export interface Substitution {
  value: string
  /** True when at least one `${...}` was replaced (escapes do not count). */
  replaced: boolean
  problems: EnvProblem[]
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Replace every `${...}` in `input`; collects all problems instead of stopping. */
export function substituteEnv(input: string, env: Env): Substitution {
  if (!input.includes('${')) return { value: input, replaced: false, problems: [] }
  let out = ''
  let replaced = false
  const problems: EnvProblem[] = []
  let i = 0
  while (i < input.length) {
    if (input.startsWith('$${', i)) {
      out += '${'
      i += 3
      continue
    }
    if (!input.startsWith('${', i)) {
      out += input[i]
      i += 1
      continue
    }
    const close = input.indexOf('}', i + 2)
    if (close === -1) {
      problems.push({ index: i, message: '`${` is not closed by `}`; write `$${` for a literal `${`' })
      out += input.slice(i)
      break
    }
    const body = input.slice(i + 2, close)
    const separator = body.indexOf(':-')
    const name = separator === -1 ? body : body.slice(0, separator)
    const fallback = separator === -1 ? undefined : body.slice(separator + 2)
    if (!NAME.test(name)) {
      problems.push({
        index: i,
        message: `\`\${${body}}\` is not a valid reference; write \`\${NAME}\` or \`\${NAME:-default}\` (NAME: letters, digits, _), or \`$\${\` for a literal \`\${\``,
      })
    } else {
      const fromEnv = env[name]
      if (fallback !== undefined && (fromEnv === undefined || fromEnv === '')) {
        out += fallback
      } else if (fromEnv !== undefined) {
        out += fromEnv
      } else {
        problems.push({ index: i, message: `environment variable ${name} is not set; set it or give a default: \`\${${name}:-value}\`` })
      }
      replaced = true
    }
    i = close + 1
  }
  return { value: out, replaced, problems }
}
