/**
 * Guessing user codes from a rotating IPv6 address (docs/threat-model.md,
 * /token: device_code; RFC 8628 5.1): one /64 is 2^64 addresses, so the
 * per-address limit on wrong codes counts IPv6 by network
 * (`rate_limit.ipv6_prefix`), as sign-in and client authentication do
 * (test/as/address-limits.test.ts). Addresses come from X-Forwarded-For
 * (127.0.0.1 is a trusted proxy here).
 */
import t from 'tap'
import { frontYaml, formWith, get, setCookies, startFront } from '../helpers/as-front.js'
import { postForm, reply } from '../helpers/http.js'

t.test('wrong user codes from rotating addresses in one /64 lock that network, and then the right code too', async (t) => {
  const front = await startFront(await frontYaml({ topExtra: 'gateway: { trusted_proxies: [127.0.0.1] }' }))
  t.teardown(() => front.close())
  const started = await postForm(`${front.url}/device_authorization`, { client_id: 'tv', scope: 'orders:read' })
  t.equal(started.status, 200)
  const { user_code } = (await started.json()) as { user_code: string }

  const typeCode = async (typed: string, ip: string): Promise<{ status: number; headers: Headers; text: string }> => {
    const page = await get(`${front.url}/device`)
    const csrf = setCookies(page.headers).get('bw_csrf')?.value ?? ''
    const form = formWith(page.text, `${front.url}/device`, 'user_code')
    return reply(postForm(form.action, { ...form.fields, user_code: typed }, { cookie: `bw_csrf=${csrf}`, origin: front.issuer, 'x-forwarded-for': ip }))
  }

  // login_max_failures is 3 in this config: the user-code limit per address.
  for (let i = 1; i <= 3; i++) t.equal((await typeCode('ZZZZ-ZZZZ', `2001:db8:dddd:1::${i}`)).status, 400, `wrong code ${i}, from address ${i} of the /64`)
  const right = await typeCode(user_code, '2001:db8:dddd:1::99')
  t.equal(right.status, 429, 'the right code from another address of the same /64: refused')
  t.ok(right.headers.get('retry-after'), 'with Retry-After')
  t.equal(right.headers.get('location'), null, 'no way on to the approval')
  const link = await fetch(`${front.url}/device?user_code=${encodeURIComponent(user_code)}`, { headers: { 'x-forwarded-for': '2001:db8:dddd:1:ffff::1' } })
  await link.arrayBuffer()
  t.equal(link.status, 429, 'verification_uri_complete from the /64: refused the same way')
  const elsewhere = await typeCode(user_code, '2001:db8:dddd:2::1')
  t.equal(elsewhere.status, 303, 'the next /64 is not locked')
  t.equal((await front.store.devices.getByUserCode(user_code.replace('-', '')))?.record.status, 'pending', 'nothing was decided')
})
