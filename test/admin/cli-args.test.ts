/**
 * `bearward admin` reads ids that begin with `-` as ids: a grant id or a jti is random base64url,
 * and one in 64 begins with `-` (a flaky CI run met `-l…` as an "unknown option").
 */
import t from 'tap'
import { parseArgs } from 'node:util'
import { idsAsPositionals } from '../../src/admin/cli.js'

const OPTIONS = { help: { type: 'boolean', short: 'h' }, output: { type: 'string' }, person: { type: 'string' } } as const

function parse(args: string[]): { values: Record<string, unknown>; positionals: string[] } {
  return parseArgs({ args: idsAsPositionals(args, OPTIONS), allowPositionals: true, options: OPTIONS })
}

t.test('an id beginning with - is a positional, wherever it stands', async (t) => {
  t.same(parse(['grants', 'revoke', '-lq3Xw9', '--output', 'json']), { values: { output: 'json' }, positionals: ['grants', 'revoke', '-lq3Xw9'] })
  t.same(parse(['--output=json', 'tokens', 'revoke', '-x']).positionals, ['tokens', 'revoke', '-x'])
})

t.test('declared options keep their meaning; a value beginning with - is the option’s value', async (t) => {
  t.same(parse(['grants', 'list', '--person', '-alice']), { values: { person: '-alice' }, positionals: ['grants', 'list'] })
  t.same(parse(['-h']).values, { help: true })
  t.same(parse(['a', '--', '--weird-id']).positionals, ['a', '--weird-id'], 'anything after -- is positional')
})

t.test('an unknown --option is still refused by name', async (t) => {
  t.throws(() => parse(['clients', 'list', '--sorce', 'admin']), /Unknown option '--sorce'/)
})
