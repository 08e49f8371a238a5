/**
 * The package lists only what is used (issue #38 item 16): a dependency no
 * source imports still ships in every install and the image, and a
 * devDependency nothing uses costs every `npm ci` (`@swc/core` stayed for a
 * session after the suite stopped needing it). And bench/README.md labels its
 * runs by date and commit, as the runner names its results files, never by
 * who ran them.
 */
import t from 'tap'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'

interface PackageJson {
  scripts: Record<string, string>
  dependencies: Record<string, string>
  devDependencies: Record<string, string>
}

const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as PackageJson

function filesUnder(dir: string, endings: readonly string[]): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return filesUnder(path, endings)
    return endings.some((e) => name.endsWith(e)) ? [path] : []
  })
}

function text(files: readonly string[]): string {
  return files.map((f) => readFileSync(f, 'utf8')).join('\n')
}

/** `name` as a module specifier (`'name'`, `'name/sub'`, `` `name/${x}` ``) or a path into node_modules. */
function names(source: string, name: string): boolean {
  const escaped = name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
  return new RegExp(`(['"\`]|node_modules/)${escaped}(['"\`/])`).test(source)
}

t.test('every dependency is imported by the source it ships with', async (t) => {
  const source = text([...filesUnder('src', ['.ts']), ...filesUnder('bin', [''])])
  for (const name of Object.keys(pkg.dependencies)) t.ok(names(source, name), `${name} is imported in src/ or bin/`)
})

t.test('every devDependency is used by the tests, the scripts or an npm script', async (t) => {
  // This file names packages in its own words: it is no use of them.
  const used = text([...filesUnder('test', ['.ts']).filter((f) => f !== join('test', 'package-hygiene.test.ts')), ...filesUnder('scripts', ['.mjs'])])
  const npmScripts = Object.values(pkg.scripts).join('\n')
  const deps = Object.keys(pkg.dependencies)
  for (const name of Object.keys(pkg.devDependencies)) {
    const typed = /^@types\/(.+)$/.exec(name)?.[1]
    if (typed !== undefined) {
      // Types are used where what they type is: Node itself, or a dependency.
      t.ok(typed === 'node' || deps.includes(typed) || names(used, typed), `${name}: ${typed} is used`)
      continue
    }
    const tool = name === '@biomejs/biome' ? /\bbiome\b/.test(npmScripts) : false
    t.ok(tool || names(used, name), `${name} is used`)
  }
})

t.test('bench/README.md labels runs by date and commit; results files are named so', async (t) => {
  const readme = readFileSync('bench/README.md', 'utf8')
  t.notMatch(readme, /\b[Ss]ession \d+\b/, 'no run is labelled by work session')
  for (const file of readdirSync('bench/results')) {
    if (!file.endsWith('.json')) continue
    // The runtime part came in on 2026-11-30: files of earlier days (all Node 20 runs) have none, later ones must.
    const named =
      file.slice(0, 10) < '2026-11-30' ? /^\d{4}-\d{2}-\d{2}-[0-9a-f]{7}(\+dirty)?\.json$/ : /^\d{4}-\d{2}-\d{2}-[0-9a-f]{7}(\+dirty)?-node\d+\.json$/
    t.match(file, named, `${file}: <date>-<commit>[-node<major>].json`)
  }
  t.match(readFileSync('bench/run.mjs', 'utf8'), /\$\{date\}-\$\{commit\}-\$\{runtime\}\.json/, 'the runner writes them so')
})
