import t from 'tap'
import { checkAllowed, mapClaims, providerOfSubject, upstreamSubject } from '../../../src/as/identity-providers/person.js'
import type { IdentityProviderConfig } from '../../../src/config/validated-config.js'

t.test('sub: <provider id>:<upstream sub>, printable ASCII of at most 255 only', async (t) => {
  t.equal(upstreamSubject('corp', '00u1abc'), 'corp:00u1abc')
  t.equal(upstreamSubject('corp', 'a'.repeat(255)), `corp:${'a'.repeat(255)}`)
  t.equal(upstreamSubject('corp', 'a'.repeat(256)), null, 'too long')
  t.equal(upstreamSubject('corp', 'ann\r\nX-Auth-Subject: admin'), null, 'no header injection through the sub')
  t.equal(upstreamSubject('corp', 'änn'), null, 'not ASCII')
  t.equal(upstreamSubject('corp', ''), null, 'empty')
  const ids = new Set(['corp', 'lab'])
  t.equal(providerOfSubject('corp:ann', ids), 'corp')
  t.equal(providerOfSubject('lab:corp:ann', ids), 'lab', 'the first colon decides')
  t.equal(providerOfSubject('alice', ids), null)
  t.equal(providerOfSubject('other:ann', ids), null, 'a provider no longer configured')
})

t.test('allowed: email domains (not unverified), claim values; every rule must hold', async (t) => {
  const domains = { emailDomains: ['example.com'], claim: null }
  t.same(checkAllowed(null, {}), { allowed: true })
  t.same(checkAllowed(domains, { email: 'Ann@Example.COM' }), { allowed: true }, 'domains compare case-insensitively')
  t.match(checkAllowed(domains, { email: 'ann@example.com', email_verified: false }), { allowed: false, reason: 'email address not verified' })
  t.match(checkAllowed(domains, { email: 'ann@sub.example.com' }), { allowed: false }, 'no subdomains')
  t.match(checkAllowed(domains, { email: 'ann@example.com.evil.org' }), { allowed: false })
  t.match(checkAllowed(domains, { email: 'evil.org@example.com@evil.org' }), { allowed: false }, 'the last @ decides')
  t.match(checkAllowed(domains, {}), { allowed: false, reason: 'no email address' })
  const groups = { emailDomains: null, claim: { name: 'groups', values: ['admins'] } }
  t.same(checkAllowed(groups, { groups: ['staff', 'admins'] }), { allowed: true })
  t.same(checkAllowed(groups, { groups: 'admins' }), { allowed: true }, 'a single string')
  t.match(checkAllowed(groups, { groups: ['staff'] }), { allowed: false })
  t.match(checkAllowed(groups, { groups: [{ admins: true }] }), { allowed: false }, 'only strings count')
  t.match(checkAllowed({ ...domains, claim: groups.claim }, { email: 'ann@example.com', groups: ['staff'] }), { allowed: false }, 'both rules must hold')
})

t.test('claims mapping: ours from theirs, missing and null left out', async (t) => {
  const config = { claims: { name: 'displayName', email: 'mail', groups: 'roles' } } as unknown as IdentityProviderConfig
  t.same(mapClaims(config, { displayName: 'Ann', mail: 'ann@example.com', roles: null, other: 'x' }), { name: 'Ann', email: 'ann@example.com' })
})
