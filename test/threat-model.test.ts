import t from 'tap'
import { existsSync, readFileSync } from 'node:fs'

/**
 * docs/threat-model.md stays true: every surface a stranger or a signed-in
 * person can reach has its section, every section has rows, and every row
 * names a test file that exists and a test in it by its exact name. A test
 * renamed, moved or deleted makes this fail, naming the row, so the model is
 * changed together with the suite (issue #38).
 */

const MODEL = 'docs/threat-model.md'

/** Headings of the model that are not surfaces: they need no rows. */
const NOT_SURFACES = new Set(['How this file is structured', 'Surfaces to come'])

/** The surfaces issue #38 names: each must keep its section (`## ` heading, exactly). */
const REQUIRED_SURFACES = [
  'Pages: sign-in, consent, account, device, passkeys',
  'Second factors and sign-in strength',
  'Sign-out',
  '/authorize',
  '/token: authorization_code and PKCE',
  '/token: refresh_token',
  '/token: client_credentials',
  '/token: device_code',
  '/token: jwt-bearer (ID-JAG and workload tokens)',
  '/token: token exchange',
  'Client authentication',
  '/revoke',
  '/introspect',
  '/userinfo',
  'Dynamic client registration',
  'Client ID metadata documents',
  'Server metadata and keys',
  'Upstream identity providers',
  'Gateway: own JWT access tokens',
  'Gateway: foreign JWTs (JWKS)',
  'Gateway: opaque tokens (introspection)',
  'Gateway: DPoP',
  'Mutual TLS and certificate-bound tokens',
  'Gateway: scopes, audience and step-up',
  'Gateway: credentials sent upstream',
  'Request handling: headers, paths and smuggling',
  'Slow and hostile clients',
  'Admin API',
  'MCP',
  'WebSocket and long-lived streams',
  'HTTP/2 and gRPC',
  'Admin listener',
  'Config reload',
  'Store (Redis) faults',
  '/par and request objects',
  'FAPI 2.0 profile',
  'Concurrency limits',
  'Back-channel logout',
  'Audit trail',
]

/** One row of a surface table: the attack and the test that refuses it. */
interface Row {
  surface: string
  line: number
  attack: string
  file: string
  test: string
}

interface Model {
  surfaces: Map<string, Row[]>
  problems: string[]
}

/** Split a Markdown table line into its cells; `\|` is a pipe inside a cell. */
function cells(line: string): string[] {
  const inner = line.trim().replace(/^\|/, '').replace(/\|$/, '')
  return inner.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, '|'))
}

/**
 * Read the model: `## ` headings are surfaces (but NOT_SURFACES), and each
 * table line under one is a row `| attack | answer | `test/….test.ts` | test name |`.
 * Gaps are bullet lists, not table lines, so they are not rows.
 */
function parseModel(markdown: string): Model {
  const surfaces = new Map<string, Row[]>()
  const problems: string[] = []
  let surface: string | null = null
  let fenced = false
  markdown.split('\n').forEach((text, i) => {
    const line = i + 1
    if (text.startsWith('```')) fenced = !fenced
    if (fenced) return
    const heading = /^##\s+(.*?)\s*$/.exec(text)
    if (heading !== null) {
      const name = heading[1] ?? ''
      surface = NOT_SURFACES.has(name) ? null : name
      if (surface !== null) {
        if (surfaces.has(surface)) problems.push(`line ${line}: the surface "${surface}" has two sections`)
        surfaces.set(surface, surfaces.get(surface) ?? [])
      }
      return
    }
    if (surface === null || !text.trimStart().startsWith('|')) return
    const row = cells(text)
    if (row.every((c) => /^:?-+:?$/.test(c))) return // the separator line
    if (row[2] === 'Test file') return // the header line
    if (row.length !== 4) {
      problems.push(`line ${line}: a row of "${surface}" has ${row.length} cells, not 4 (attack, answer, test file, test name)`)
      return
    }
    const [attack = '', , fileCell = '', test = ''] = row
    const file = /^`(test\/[^`]+\.test\.ts)`$/.exec(fileCell)?.[1]
    if (file === undefined) {
      problems.push(`line ${line}: "${fileCell}" is not a test file path in backticks (\`test/….test.ts\`)`)
      return
    }
    if (attack === '' || test === '') {
      problems.push(`line ${line}: a row of "${surface}" without its attack or test name`)
      return
    }
    surfaces.get(surface)?.push({ surface, line, attack, file, test })
  })
  return { surfaces, problems }
}

/**
 * The names a test file gives its tests: the string literal opening each
 * `.test(` call. A template literal's `${…}` parts match any text, so a row
 * may name one instance of a test written for several (say, per endpoint).
 */
function testNames(source: string): { exact: Set<string>; patterns: RegExp[] } {
  const exact = new Set<string>()
  const patterns: RegExp[] = []
  for (const m of source.matchAll(/\.test\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/gs)) {
    const raw = (m[2] ?? '').replace(/\\(['"`\\])/g, '$1')
    if (m[1] === '`' && raw.includes('${')) {
      const parts = raw.split(/\$\{[^}]*\}/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      patterns.push(new RegExp(`^${parts.join('.+')}$`, 's'))
    } else exact.add(raw)
  }
  return { exact, patterns }
}

/** Everything wrong with `markdown` as a threat model, one sentence each. */
function checkModel(markdown: string, readSource: (file: string) => string | null): { problems: string[]; rows: number } {
  const { surfaces, problems } = parseModel(markdown)
  for (const name of REQUIRED_SURFACES) if (!surfaces.has(name)) problems.push(`the surface "## ${name}" is missing`)
  let rows = 0
  const names = new Map<string, ReturnType<typeof testNames> | null>()
  for (const [surface, list] of surfaces) {
    if (list.length === 0) problems.push(`the surface "${surface}" has no rows: each attack needs the test that refuses it`)
    for (const row of list) {
      rows++
      if (!names.has(row.file)) {
        const source = readSource(row.file)
        names.set(row.file, source === null ? null : testNames(source))
      }
      const found = names.get(row.file)
      if (found === null || found === undefined) {
        problems.push(`line ${row.line} (${surface}): ${row.file} does not exist`)
        continue
      }
      if (!found.exact.has(row.test) && !found.patterns.some((p) => p.test(row.test))) {
        problems.push(`line ${row.line} (${surface}): ${row.file} has no test named "${row.test}"`)
      }
    }
  }
  return { problems, rows }
}

const readRepoFile = (file: string): string | null => (existsSync(file) ? readFileSync(file, 'utf8') : null)

t.test('every surface of docs/threat-model.md has rows, each naming a test that exists by its exact name', async (t) => {
  const { problems, rows } = checkModel(readFileSync(MODEL, 'utf8'), readRepoFile)
  for (const problem of problems) t.fail(`${MODEL}: ${problem}`)
  t.same(problems, [], 'no problem found')
  t.ok(rows >= REQUIRED_SURFACES.length, `${rows} rows checked`)
})

t.test('the checker catches what it looks for', async (t) => {
  const sources: Record<string, string> = {
    'test/a.test.ts': "t.test('refuses the attack', async () => {})\nt.test(`${path}: answers the preflight`, f)\nt.test(\"a client's token\", f)",
  }
  const read = (file: string): string | null => sources[file] ?? null
  const head = '| Attack | What bearward does | Test file | Test |\n|---|---|---|---|\n'
  const all = REQUIRED_SURFACES.map((s) => `## ${s}\n\n${head}| an attack | refused | \`test/a.test.ts\` | refuses the attack |\n`).join('\n')
  t.same(checkModel(all, read).problems, [], 'a good model passes')

  const patterned = all.replace('| refuses the attack |', '| /token: answers the preflight |').replace('| refuses the attack |', "| a client's token |")
  t.same(checkModel(patterned, read).problems, [], 'a template name matches an instance of it; quotes are read as written')

  const missingFile = all.replace('`test/a.test.ts`', '`test/gone.test.ts`')
  t.match(checkModel(missingFile, read).problems, [/test\/gone\.test\.ts does not exist/], 'a missing file is named')

  const renamed = all.replace('| refuses the attack |', '| refuses the attack, renamed |')
  t.match(checkModel(renamed, read).problems, [/has no test named "refuses the attack, renamed"/], 'a test name not in the file is named')

  const commentOnly = { 'test/a.test.ts': "// refuses the attack\nt.test('something else', f)" }
  t.ok(
    checkModel(all, (f) => commentOnly[f as keyof typeof commentOnly] ?? null).problems.every((p) => p.includes('has no test named')),
    'a name that only occurs in a comment is no test',
  )

  const empty = `${all}\n## A new surface\n\nNothing yet.\n`
  t.match(checkModel(empty, read).problems, [/"A new surface" has no rows/], 'a surface without rows is named')

  const [first = ''] = REQUIRED_SURFACES
  const dropped = all.replace(`## ${first}\n`, '## Something else\n')
  t.match(
    checkModel(dropped, read).problems,
    [new RegExp(`"## ${first.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}" is missing`)],
    'a missing required surface is named',
  )

  const malformed = all.replace('`test/a.test.ts`', 'test/a.test.ts')
  t.match(checkModel(malformed, read).problems, [/is not a test file path in backticks/], 'a path outside backticks is named')

  const gapsAreNoRows = `${all}\n## Extra\n\n${head}| x | y | \`test/a.test.ts\` | refuses the attack |\n\n### Gaps\n\n- an attack without a test\n`
  t.same(checkModel(gapsAreNoRows, read).problems, [], 'a gaps list is not read as rows')
})
