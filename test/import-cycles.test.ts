import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import ts from 'typescript'

/**
 * No import cycle in src/: a module imports only what sits below it (a grant
 * never imports an endpoint). Every relative import is followed, runtime and
 * type-only alike, with the TypeScript parser (no regex over comments or
 * strings); a cycle fails with its path, e.g. `as/token.ts -> as/grants/x.ts
 * -> as/token.ts`.
 *
 * And no import points up the layers that docs/architecture.md's table
 * names: the table is read from the page itself, so the page and the code
 * cannot drift apart.
 */

const SRC = resolve('src')
const ARCHITECTURE = resolve('docs/architecture.md')

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

/** A layer of the architecture page's table: its name and the files and folders (`as/`) it holds, top layer first. */
interface Layer {
  readonly name: string
  readonly paths: readonly string[]
}

/** The rows of the table under `## Layers`: a name, then the files and folders of the layer, each in backquotes. */
function layersOf(markdown: string): Layer[] {
  const lines = markdown.split('\n')
  const start = lines.indexOf('## Layers')
  const layers: Layer[] = []
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('## ')) break
    const cells = line.split('|').map((c) => c.trim())
    if (!line.startsWith('|') || cells.length < 4 || cells[1] === 'layer' || /^-+$/.test(cells[1] ?? '')) continue
    const paths = [...(cells[2] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '')
    layers.push({ name: cells[1] ?? '', paths })
  }
  return layers
}

/** The index of the layer that holds `path` (relative to src/, `/`-separated): the longest matching entry wins. */
function layerIndex(layers: readonly Layer[], path: string): number | undefined {
  let best: { index: number; length: number } | undefined
  layers.forEach((layer, index) => {
    for (const entry of layer.paths) {
      const holds = entry.endsWith('/') ? path.startsWith(entry) : path === entry
      if (holds && (best === undefined || entry.length > best.length)) best = { index, length: entry.length }
    }
  })
  return best?.index
}

/** `src/as/x.ts` as `as/x.ts`, with `/` whatever the platform. */
function srcPath(file: string): string {
  return relative(SRC, file).split(sep).join('/')
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

t.test('the layer table is read as the page writes it', async (t) => {
  const layers = layersOf(
    '# A\n\n## Layers\n\n| layer | folders | what |\n|---|---|---|\n| top | `a.ts`, `b/` | x |\n| low | `b/c.ts`, `d/` | y |\n\n## Next\n| z | `e/` | w |\n',
  )
  t.same(layers, [
    { name: 'top', paths: ['a.ts', 'b/'] },
    { name: 'low', paths: ['b/c.ts', 'd/'] },
  ])
  t.equal(layerIndex(layers, 'b/x.ts'), 0)
  t.equal(layerIndex(layers, 'b/c.ts'), 1, 'a file named in a lower row belongs there, not to its folder')
  t.equal(layerIndex(layers, 'e/f.ts'), undefined, 'only the Layers table counts')
})

t.test('src/ imports only down the layers of docs/architecture.md', async (t) => {
  const layers = layersOf(readFileSync(ARCHITECTURE, 'utf8'))
  t.ok(layers.length >= 5, `the layer table was found (${layers.map((l) => l.name).join(', ')})`)
  const files = sourceFiles(SRC)
  const unplaced = files.map(srcPath).filter((p) => layerIndex(layers, p) === undefined)
  t.same(unplaced, [], 'every source file sits in a layer the page names')
  const upward: string[] = []
  for (const file of files) {
    const from = layerIndex(layers, srcPath(file))
    for (const target of importsOf(file, readFileSync(file, 'utf8')).map((s) => resolveSpecifier(file, s))) {
      const to = layerIndex(layers, srcPath(target))
      if (from !== undefined && to !== undefined && to < from) {
        upward.push(`${srcPath(file)} (${layers[from]?.name}) -> ${srcPath(target)} (${layers[to]?.name})`)
      }
    }
  }
  t.same(upward, [], 'no import points from a lower layer to a higher one')
})
