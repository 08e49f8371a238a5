/**
 * Token extraction details a client can run into (RFC 6750 2): the query
 * the upstream receives keeps every other parameter byte for byte, and the
 * scope claim forms issuers send are all understood.
 */
import t from 'tap'
import { InvalidRequest } from '../../src/errors.js'
import { takeBodyToken, takeQueryToken } from '../../src/gateway/extract.js'
import { grantedScopes, ScopeRule } from '../../src/gateway/scope.js'

t.test('takeQueryToken removes exactly the access_token parameter', async (t) => {
  t.same(takeQueryToken(''), { token: null, query: '' })
  t.same(takeQueryToken('a=1&b=%2F'), { token: null, query: 'a=1&b=%2F' })
  t.same(takeQueryToken('a=%2F+x&access_token=abc.def-_~%2B%2F%3D&b'), { token: 'abc.def-_~+/=', query: 'a=%2F+x&b' })
  t.same(takeQueryToken('access%5Ftoken=abc&z=1'), { token: 'abc', query: 'z=1' }, 'an encoded name is still the parameter')
  t.same(takeQueryToken('access_token=&z=1'), { token: null, query: 'z=1' }, 'empty counts as absent (RFC 6749 3.1), still removed')
  t.throws(() => takeQueryToken('access_token=a&access_token=b'), InvalidRequest)
  t.throws(() => takeQueryToken('access_token=a%20b'), InvalidRequest, 'outside the b64token grammar')
  t.throws(() => takeQueryToken('access_token=%E0%A4%A'), InvalidRequest, 'malformed percent-encoding in the token')
  t.same(takeQueryToken('%E0%A4%A=x&access_token=a'), { token: 'a', query: '%E0%A4%A=x' }, 'other parameters are not judged')
})

t.test('takeBodyToken removes exactly the access_token parameter, every other byte kept (issue #38)', async (t) => {
  const take = (body: string | Buffer) => {
    const out = takeBodyToken(typeof body === 'string' ? Buffer.from(body, 'latin1') : body)
    return { token: out.token, body: out.body.toString('latin1') }
  }
  t.same(take(''), { token: null, body: '' })
  t.same(take('note=hi&access_token=abc'), { token: 'abc', body: 'note=hi' })
  t.same(take('access_token=abc'), { token: 'abc', body: '' })
  t.same(take('a=%2F+x&access_token=abc.def-_~%2B%2F%3D&b&&=&'), { token: 'abc.def-_~+/=', body: 'a=%2F+x&b&&=&' })
  t.same(
    take('a=1&access%5Ftoken=abc&%61ccess_token+=x'),
    { token: 'abc', body: 'a=1&%61ccess_token+=x' },
    'an encoded name is the parameter; `access_token ` is another',
  )
  t.same(take('access_token=&z=1'), { token: null, body: 'z=1' }, 'empty counts as absent, still removed')
  t.same(take('n=\xe9\xff%FF&access_token=abc&m=\x00'), { token: 'abc', body: 'n=\xe9\xff%FF&m=\x00' }, 'bytes that are not UTF-8 pass unchanged')
  t.throws(() => take('access_token=a&access%5ftoken=b'), InvalidRequest, 'repeated')
  t.throws(() => take('access_token=a%20b'), InvalidRequest, 'outside the b64token grammar')
  t.throws(() => take('access_token=%E0%A4%A'), InvalidRequest, 'malformed percent-encoding in the token')
  const untouched = Buffer.from('a=1&b=2')
  t.equal(takeBodyToken(untouched).body, untouched, 'a body without a token is forwarded as the same bytes')
})

t.test('granted scopes from scope or scp', async (t) => {
  t.same(grantedScopes({ scope: 'a  b c' }), ['a', 'b', 'c'])
  t.same(grantedScopes({ scp: ['a', 'b'] }), ['a', 'b'])
  t.same(grantedScopes({ scp: 'a b' }), ['a', 'b'])
  t.same(grantedScopes({}), [])
  t.equal(grantedScopes({ scope: 42 }), null)
  t.equal(grantedScopes({ scp: ['a', 1] }), null)
})

t.test('scope rules per method, * as the fallback, all listed required', async (t) => {
  const rule = new ScopeRule({ GET: ['read'], POST: ['read', 'write'], '*': ['admin'] })
  t.equal(rule.check(['read'], 'GET'), null)
  t.equal(rule.check(['read'], 'HEAD'), null, 'HEAD follows GET')
  t.equal(rule.check(['write'], 'POST')?.challengeParams.scope, 'read write')
  t.equal(rule.check(['read', 'write'], 'POST'), null)
  t.equal(rule.check(['read'], 'DELETE')?.challengeParams.scope, 'admin')
  t.same(new ScopeRule({}).required('GET'), [])
  t.equal(new ScopeRule({}).check([], 'GET'), null)
})
