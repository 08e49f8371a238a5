/**
 * OpenID CIBA Core 1.0 7.1 `login_hint` as an email, for every kind of person: YAML, created
 * through the admin API (the store's `people`), and signed in through an identity provider (the
 * store's `upstream` people). Case-insensitive; an email two people hold names nobody; an email
 * whose claims say `email_verified: false` names nobody; a disabled, deleted or forgotten person
 * is unknown. Every refusal is `unknown_user_id` and opens no approval.
 */
import t from 'tap'
import { startAs } from '../../helpers/as-back.js'
import { approvalIdOf, bcAuthorize, cibaClients, startReceiver } from '../../helpers/ciba.js'
import type { PersonRecord } from '../../../src/store/types.js'

const CORP = 'https://corp.example.com'

t.test('login_hint by email finds admin-created and federated people, and only one', async (t) => {
  const receiver = await startReceiver()
  t.teardown(receiver.close)
  const h = await startAs({
    top: 'admin_api: { enabled: true }',
    clientsExtra: await cibaClients(receiver.url),
    asExtra: [
      '  ciba: { ttl: 120s, interval: 5s }',
      '  identity_providers:',
      `    - { id: corp, name: Corp SSO, issuer: "${CORP}", client_id: bearward }`,
    ].join('\n'),
  })
  t.teardown(() => h.close())
  const at = Math.floor(h.clock.now() / 1000)
  const person = (username: string, sub: string, claims: Record<string, unknown>): PersonRecord => ({
    username,
    sub,
    claims,
    passwordHash: null,
    disabled: false,
    createdAt: at,
    updatedAt: at,
    version: 1,
  })
  const keepSec = 3600
  const federated = (upstreamSub: string, claims: Record<string, unknown>) =>
    h.store.upstream.putPerson(`corp:${upstreamSub}`, { provider: 'corp', upstreamSub, claims, updatedAt: at }, keepSec)
  /** The person the request's approval is for, or the error it was refused with (and then no approval was opened). */
  const whoIs = async (hint: string): Promise<string> => {
    const before = (await h.as.approvals.listForPerson('user-erin')).length + (await h.as.approvals.listForPerson('corp:u-7')).length
    const r = await bcAuthorize(h, { scope: 'openid', login_hint: hint })
    if (r.status === 200) return String((await h.as.approvals.get(approvalIdOf(String(r.json?.auth_req_id))))?.sub)
    const after = (await h.as.approvals.listForPerson('user-erin')).length + (await h.as.approvals.listForPerson('corp:u-7')).length
    t.equal(after, before, `${hint}: refused, no approval opened`)
    t.equal(r.status, 400, r.text)
    return String(r.json?.error)
  }

  await t.test('a person created through the admin API, by the email in their claims, in any case', async (t) => {
    t.equal(await h.store.people.create(person('erin', 'user-erin', { name: 'Erin', email: 'Erin@Corp.example' })), 'created')
    t.equal(await whoIs('erin@corp.example'), 'user-erin')
    t.equal(await whoIs('ERIN@CORP.EXAMPLE'), 'user-erin')
    t.equal((await h.store.people.update('erin', null, { claims: { name: 'Erin', email: 'erin@new.example' } }, at + 1)).kind, 'updated')
    t.equal(await whoIs('erin@corp.example'), 'unknown_user_id', 'an email changed away names nobody')
    t.equal(await whoIs('erin@new.example'), 'user-erin', 'the new one names them at once')
    t.equal((await h.store.people.update('erin', null, { disabled: true }, at + 2)).kind, 'updated')
    t.equal(await whoIs('erin@new.example'), 'unknown_user_id', 'a disabled person is unknown')
    t.equal((await h.store.people.update('erin', null, { disabled: false }, at + 3)).kind, 'updated')
    t.equal(await whoIs('erin@new.example'), 'user-erin')
  })

  await t.test('an email is compared with only its ASCII letters folded: the Kelvin sign is not a k', async (t) => {
    // toLowerCase() folds U+212A, the Kelvin sign, to an ASCII "k": an address nobody holds would name someone.
    t.equal(await h.store.people.create(person('kim', 'user-kim', { email: 'kim@corp.example' })), 'created')
    await federated('u-10', { email: 'kate@corp.example', email_verified: true })
    t.equal(await whoIs('KIM@corp.example'), 'user-kim', 'ASCII case is folded')
    t.equal(await whoIs('\u212Aim@corp.example'), 'unknown_user_id', 'an admin-created person is not named by the Kelvin sign')
    t.equal(await whoIs('\u212Aate@corp.example'), 'unknown_user_id', 'nor a federated one')
    t.equal(await whoIs('KATE@corp.example'), 'corp:u-10')
  })

  await t.test('a person who signed in through an identity provider, while the store remembers them', async (t) => {
    await federated('u-7', { name: 'Gus', email: 'Gus@Corp.example', email_verified: true })
    t.equal(await whoIs('gus@corp.example'), 'corp:u-7')
    await federated('u-8', { email: 'liar@corp.example', email_verified: false })
    t.equal(await whoIs('liar@corp.example'), 'unknown_user_id', 'an email the provider says is unverified names nobody')
  })

  await t.test('an email two people hold names nobody, whichever kinds they are', async (t) => {
    t.equal(await whoIs('bob@example.com'), 'user-0002', 'a YAML person alone')
    await federated('u-9', { email: 'BOB@example.com', email_verified: true })
    t.equal(await whoIs('bob@example.com'), 'unknown_user_id', 'a YAML and a federated person')
    t.equal(await h.store.people.create(person('gus2', 'user-gus2', { email: 'gus@corp.example' })), 'created')
    t.equal(await whoIs('gus@corp.example'), 'unknown_user_id', 'an admin-created and a federated person')
    t.equal((await h.store.people.delete('gus2'))?.sub, 'user-gus2')
    t.equal(await whoIs('gus@corp.example'), 'corp:u-7', 'one again once the other is deleted')
    t.equal(await h.store.people.create(person('erin2', 'user-erin2', { email: 'ERIN@new.example' })), 'created')
    t.equal(await whoIs('erin@new.example'), 'unknown_user_id', 'two admin-created people')
    t.equal((await h.store.people.update('erin2', null, { claims: { email: 'erin@new.example', email_verified: false } }, at + 4)).kind, 'updated')
    t.equal(await whoIs('erin@new.example'), 'user-erin', 'an unverified holder does not count')
  })

  await t.test('a federated person the store has forgotten is unknown', async (t) => {
    h.clock.advance((keepSec + 1) * 1000)
    t.equal(await whoIs('gus@corp.example'), 'unknown_user_id')
  })
})
