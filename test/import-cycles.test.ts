import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

/**
 * No import cycle in src/: a module imports only what sits below it (a grant
 * never imports an endpoint). Every relative import is followed, runtime and
 * type-only alike, with the TypeScript parser (no regex over comments or
 * strings); a cycle fails with its path, e.g. `as/token.ts -> as/grants/x.ts
 * -> as/token.ts`.
 */

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : []
  })
}

/** The relative module specifiers of a file: import/export ... from, import('...'), and `import x = require('...')`. */
function importsOf(fileName: string, text: string): string[] {
  const file = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS)
  const found: string[] = []
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text)
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push(node.arguments[0].text)
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text)
    } else if (ts.isExternalModuleReference(node) && ts.isStringLiteral(node.expression)) {
      found.push(node.expression.text)
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return found.filter((s) => s.startsWith('.'))
}

/** `./x.js` from `/src/a/b.ts` is `/src/a/x.ts` (NodeNext: the specifier names the emitted file). */
function resolveSpecifier(from: string, specifier: string): string {
  return resolve(dirname(from), specifier).replace(/\.js$/, '.ts')
}

/** Cycles as the paths that close them: a depth-first walk reports at least one whenever there is one, as a readable path. */
function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const cycles: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const walk = (node: string): void => {
    state.set(node, 'open')
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      const s = state.get(next)
      if (s === 'open') cycles.push([...stack.slice(stack.indexOf(next)), next])
      else if (s === undefined) walk(next)
    }
    stack.pop()
    state.set(node, 'done')
  }
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) walk(node)
  return cycles
}

t.test('the cycle finder finds a cycle, and none where there is none', async (t) => {
  t.same(
    findCycles(
      new Map([
        ['a', ['b']],
        ['b', ['c']],
        ['c', ['a']],
      ]),
    ),
    [['a', 'b', 'c', 'a']],
  )
  t.same(
    findCycles(
      new Map([
        ['a', ['b', 'c']],
        ['b', ['c']],
        ['c', []],
      ]),
    ),
    [],
    'a diamond is not a cycle',
  )
  t.same(findCycles(new Map([['a', ['a']]])), [['a', 'a']], 'a module importing itself')
  t.same(
    importsOf(
      'x.ts',
      "import a from './a.js'\nimport type { B } from '../b.js'\nexport * from './c.js'\nconst d = await import('./d.js')\ntype E = import('./e.js').E\nimport fs from 'node:fs'\n// import z from './z.js'\n",
    ),
    ['./a.js', '../b.js', './c.js', './d.js', './e.js'],
    'every kind of relative import, never a comment or a package',
  )
})

t.test('src/ has no import cycle', async (t) => {
  const files = sourceFiles(SRC)
  t.ok(files.length > 50, `found the sources (${files.length} files)`)
  const known = new Set(files)
  const graph = new Map<string, string[]>()
  const unresolved: string[] = []
  for (const file of files) {
    const targets = importsOf(file, readFileSync(file, 'utf8')).map((s) => resolveSpecifier(file, s))
    for (const target of targets) if (!known.has(target)) unresolved.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`)
    graph.set(file, targets)
  }
  t.same(unresolved, [], 'every relative import resolves to a source file (else the graph would miss edges)')
  const cycles = findCycles(graph).map((c) => c.map((f) => relative(SRC, f)).join(' -> '))
  t.same(cycles, [], 'no module reaches itself through its imports')
})
