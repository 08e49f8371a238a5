/**
 * Attacks with what `upstream_token: assertion` gives an upstream (#38): a
 * JWT signed with bearward's own key (`typ: bearward-assertion+jwt`), which a
 * malicious upstream (or whoever reads its logs) presents back to bearward.
 * Every own-token check requires `at+jwt` (an ID token hint, `JWT`), so it
 * is refused everywhere: /introspect, /userinfo, /revoke leaves the client's
 * token alive, token exchange (subject and actor), and every route.
 */
import t from 'tap'
import { decodeProtectedHeader } from 'jose'
import { basic, demoSecretHash, postForm, serviceToken, startTarget } from '../helpers/attack.js'

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token'
const API = 'https://billing-api.example.com'

t.test('an upstream assertion presented back to bearward is refused everywhere', async (t) => {
  const target = await startTarget({
    clients: `- { client_id: exchanger, type: confidential, secret_hash: "${await demoSecretHash()}", grant_types: [token-exchange], scopes: [orders:read], token_exchange: { audiences: ["${API}"] } }`,
    routes: (up) =>
      [
        `- { name: asserted, match: { path: /asserted }, upstream: "${up}", upstream_token: assertion, upstream_audience: "http://billing.internal" }`,
        `- { name: api, match: { path: /api }, upstream: "${up}", audience: "${API}" }`,
      ].join('\n'),
  })
  t.teardown(() => target.close())
  const token = await serviceToken(target)
  const res = await fetch(`${target.url}/asserted/x`, { headers: { authorization: `Bearer ${token}` } })
  await res.arrayBuffer()
  t.equal(res.status, 200)
  const assertion = String(target.upstream.seen.at(-1)?.headers['x-bearward-assertion'] ?? '')
  t.equal(decodeProtectedHeader(assertion).typ, 'bearward-assertion+jwt', 'the upstream got an assertion')

  const introspected = await postForm(`${target.url}/introspect`, { token: assertion }, { authorization: basic('service', target.secret) })
  t.same(await introspected.json(), { active: false }, '/introspect: inactive')

  const userinfo = await fetch(`${target.url}/userinfo`, { headers: { authorization: `Bearer ${assertion}` } })
  t.equal(userinfo.status, 401, '/userinfo: 401')

  const seenBefore = target.upstream.seen.length
  for (const path of ['/orders', '/asserted/x']) {
    const r = await fetch(`${target.url}${path}`, { headers: { authorization: `Bearer ${assertion}` } })
    await r.arrayBuffer()
    t.equal(r.status, 401, `${path}: 401`)
  }
  t.equal(target.upstream.seen.length, seenBefore, 'nothing reached the upstream')

  const exchanger = basic('exchanger', target.secret)
  const control = await postForm(
    `${target.url}/token`,
    { grant_type: EXCHANGE, subject_token: token, subject_token_type: ACCESS_TOKEN },
    { authorization: exchanger },
  )
  t.equal(control.status, 200, "the client's own token exchanges (control)")
  const asSubject = await postForm(
    `${target.url}/token`,
    { grant_type: EXCHANGE, subject_token: assertion, subject_token_type: ACCESS_TOKEN },
    { authorization: exchanger },
  )
  t.match(await asSubject.json(), { error: 'invalid_grant' }, 'not a subject token')
  const asActor = await postForm(
    `${target.url}/token`,
    { grant_type: EXCHANGE, subject_token: token, subject_token_type: ACCESS_TOKEN, actor_token: assertion, actor_token_type: ACCESS_TOKEN },
    { authorization: exchanger },
  )
  t.match(await asActor.json(), { error: 'invalid_grant' }, 'not an actor token')

  // /revoke answers 200 whatever it is given (RFC 7009 2.2); the client's own token stays alive.
  const revoked = await postForm(`${target.url}/revoke`, { token: assertion }, { authorization: basic('service', target.secret) })
  t.equal(revoked.status, 200)
  const still = await postForm(`${target.url}/introspect`, { token }, { authorization: basic('service', target.secret) })
  t.match(await still.json(), { active: true }, "the client's token is untouched")
})
