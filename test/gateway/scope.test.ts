import t from 'tap'
import { grantedScopes, ScopeRule } from '../../src/gateway/scope.js'

t.test('a method without its own rule needs every listed scope (fail closed)', async (t) => {
  const rule = new ScopeRule({ GET: ['orders:read'], POST: ['orders:write'] })
  t.same(rule.required('GET'), ['orders:read'])
  t.same(rule.required('HEAD'), ['orders:read'], 'HEAD follows GET')
  t.same(rule.required('DELETE'), ['orders:read', 'orders:write'])
  t.equal(rule.check(['orders:read'], 'GET'), null)
  const refusal = rule.check(['orders:read'], 'DELETE')
  t.equal(refusal?.status, 403)
  t.equal(refusal?.challengeParams.scope, 'orders:read orders:write', 'the challenge names what is needed')
  t.equal(rule.check(['orders:read', 'orders:write'], 'PATCH'), null)
})

t.test('"*" is the rule for unlisted methods when present; no rule at all needs no scope', async (t) => {
  const star = new ScopeRule({ GET: ['a'], '*': ['admin'] })
  t.same(star.required('DELETE'), ['admin'])
  t.same(new ScopeRule({}).required('DELETE'), [])
  t.equal(new ScopeRule({}).check([], 'POST'), null)
})

t.test('granted scopes come from `scope` (string) or `scp` (array)', async (t) => {
  t.same(grantedScopes({ scope: 'a  b' }), ['a', 'b'])
  t.same(grantedScopes({ scp: ['a', 'b'] }), ['a', 'b'])
  t.same(grantedScopes({}), [])
  t.equal(grantedScopes({ scope: 42 }), null, 'a wrong type is no scope at all')
  t.equal(grantedScopes({ scp: ['a', 1] }), null)
})
