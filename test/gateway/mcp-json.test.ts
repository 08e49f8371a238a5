/**
 * Property: the strict JSON reader of MCP bodies (src/gateway/mcp/json.ts)
 * finds a repeated or `__proto__` member name exactly where the document
 * has one, whatever quotes, backslashes and \u escapes its strings hold.
 * The documents are generated as trees and written out, so the expected
 * answer comes from the tree (names compared unescaped, the first problem
 * in document order), not from a second scanner. Its string scan looks
 * for quotes and backslashes with indexOf; an escaped quote taken for the
 * end of a string, or a backslash run misread, would shift every name
 * after it and show here. Seeded, a fixed number of runs.
 */
import fc from 'fast-check'
import t from 'tap'
import { parseStrictJson } from '../../src/gateway/mcp/json.js'

type Tree = { kind: 'object'; members: [string, Tree][] } | { kind: 'array'; items: Tree[] } | { kind: 'string'; value: string } | { kind: 'number' }

/** Names and string values: few, so that names repeat; quotes and backslashes in and around them. */
const TEXT = fc.constantFrom('a', 'b', '"', '\\', '\\\\"', 'a"b', '__proto__', 'é', '\\u', '')

const tree: fc.Arbitrary<Tree> = fc.letrec<{ node: Tree }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant<Tree>({ kind: 'number' }),
    TEXT.map<Tree>((value) => ({ kind: 'string', value })),
    fc.array(fc.tuple(TEXT, tie('node')), { maxLength: 4 }).map<Tree>((members) => ({ kind: 'object', members })),
    fc.array(tie('node'), { maxLength: 3 }).map<Tree>((items) => ({ kind: 'array', items })),
  ),
})).node

/** A string literal written plainly (JSON.stringify) or with every character as a \u escape. */
function literal(value: string, escapeAll: boolean): string {
  if (!escapeAll) return JSON.stringify(value)
  return `"${[...value].map((c) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}`).join('')}"`
}

function write(node: Tree, escapeAll: boolean): string {
  switch (node.kind) {
    case 'number':
      return '1'
    case 'string':
      return literal(node.value, escapeAll)
    case 'array':
      return `[${node.items.map((i) => write(i, escapeAll)).join(', ')}]`
    case 'object':
      return `{${node.members.map(([k, v]) => `${literal(k, escapeAll)}: ${write(v, escapeAll)}`).join(',')}}`
  }
}

/** The first problem in document order: a member's name is read before its value. */
function expected(node: Tree): 'duplicate member' | 'proto member' | null {
  if (node.kind === 'array') {
    for (const item of node.items) {
      const found = expected(item)
      if (found !== null) return found
    }
  }
  if (node.kind === 'object') {
    const seen = new Set<string>()
    for (const [name, value] of node.members) {
      if (name === '__proto__') return 'proto member'
      if (seen.has(name)) return 'duplicate member'
      seen.add(name)
      const found = expected(value)
      if (found !== null) return found
    }
  }
  return null
}

t.test('a repeated or __proto__ member name is found exactly where the document has one', async (t) => {
  let problems = 0
  fc.assert(
    fc.property(tree, fc.boolean(), (doc, escapeAll) => {
      const text = write(doc, escapeAll)
      const read = parseStrictJson(Buffer.from(text, 'utf8'))
      const want = expected(doc)
      if (want !== null) problems++
      if (want === null) return 'value' in read && JSON.stringify(read.value) === JSON.stringify(JSON.parse(text))
      return 'problem' in read && read.problem === want
    }),
    { seed: 4101, numRuns: 3000 },
  )
  // The generator must reach both answers, or the property says little.
  t.ok(problems > 300, `${problems} of 3000 documents had a repeated or __proto__ name`)
  t.pass('every document read as its tree says')
})

t.test('names are compared unescaped, and a backslash run before a quote is read as written', async (t) => {
  t.same(parseStrictJson(Buffer.from('{"name":1,"n\\u0061me":2}')), { problem: 'duplicate member' })
  t.same(parseStrictJson(Buffer.from('{"a\\\\":1,"a\\\\\\"":2,"a\\"":3}')), { value: { 'a\\': 1, 'a\\"': 2, 'a"': 3 } })
  t.same(parseStrictJson(Buffer.from('{"x":"\\\\","x":0}')), { problem: 'duplicate member' })
  t.same(parseStrictJson(Buffer.from('{"\\u005f_proto__":{}}')), { problem: 'proto member' })
})
