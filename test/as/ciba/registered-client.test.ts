/**
 * A client that registers itself (RFC 7591) with the CIBA grant: its metadata is kept and read back
 * as a CIBA client, and it may then ask at /bc-authorize; the grant joins the server metadata. A
 * CIBA-only client (OpenID CIBA Core 1.0 4) registers without the code grant and without redirect
 * URIs, and openid-client's own CIBA functions get tokens with it.
 */
import t from 'tap'
import * as oidc from 'openid-client'
import { ManualClock } from '../../../src/clock.js'
import { startAs } from '../../helpers/as-back.js'
import { basic } from '../../helpers/client-auth.js'
import { postForm, reply } from '../../helpers/http.js'
import { CIBA, decide } from '../../helpers/ciba.js'

t.test('a registered CIBA client asks at /bc-authorize', async (t) => {
  const h = await startAs({ asExtra: '  registration: { enabled: true, scopes: [openid, orders:read] }' })
  t.teardown(() => h.close())
  const meta = await reply(fetch(`${h.url}/.well-known/openid-configuration`))
  t.ok((meta.json?.grant_types_supported as string[] | undefined)?.includes(CIBA), 'strangers may register the grant: it is listed')

  const registered = await reply(
    fetch(`${h.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        client_name: 'Stranger agent',
        redirect_uris: ['https://agent.example.com/cb'],
        grant_types: ['authorization_code', CIBA],
        scope: 'openid orders:read',
        backchannel_token_delivery_mode: 'ping',
        backchannel_client_notification_endpoint: 'https://agent.example.com/ciba',
      }),
    }),
  )
  t.equal(registered.status, 201, registered.text)
  t.equal(registered.json?.backchannel_token_delivery_mode, 'ping')
  t.equal(registered.json?.backchannel_client_notification_endpoint, 'https://agent.example.com/ciba')
  const clientId = String(registered.json?.client_id)
  const secret = String(registered.json?.client_secret)
  t.same((await h.as.findClient(clientId))?.ciba, { deliveryMode: 'ping', notificationEndpoint: 'https://agent.example.com/ciba' })

  const asked = await reply(
    postForm(
      `${h.url}/bc-authorize`,
      { scope: 'openid', login_hint: 'alice', client_notification_token: 'stranger-token' },
      { authorization: basic(clientId, secret) },
    ),
  )
  t.equal(asked.status, 200, asked.text)
  t.equal((await h.as.approvals.get(String(asked.json?.auth_req_id).split('.')[0] as string))?.clientId, clientId)

  const none = await reply(
    fetch(`${h.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        redirect_uris: ['https://agent.example.com/cb'],
        token_endpoint_auth_method: 'none',
        grant_types: ['authorization_code', CIBA],
        backchannel_token_delivery_mode: 'poll',
      }),
    }),
  )
  t.equal(none.status, 400)
  t.equal(none.json?.error, 'invalid_client_metadata', 'a public client may not register the CIBA grant')
})

/** POST /register with `metadata`, as JSON. */
function register(url: string, metadata: Record<string, unknown>) {
  return reply(fetch(`${url}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(metadata) }))
}

t.test('a CIBA-only client registers without the code grant or redirect URIs, and openid-client gets tokens with it', async (t) => {
  // openid-client checks the ID token's times against the real clock: the server's starts there too.
  const h = await startAs({
    clock: new ManualClock(Date.now()),
    asExtra: '  registration: { enabled: true, scopes: [openid, orders:read] }\n  ciba: { ttl: 120s, interval: 1s }',
  })
  t.teardown(() => h.close())

  const poll = await register(h.url, { client_name: 'Poll agent', grant_types: [CIBA], scope: 'openid orders:read', backchannel_token_delivery_mode: 'poll' })
  t.equal(poll.status, 201, poll.text)
  t.same(poll.json?.grant_types, [CIBA], 'the CIBA grant alone')
  t.same(poll.json?.redirect_uris, [], 'no redirect URI: nothing redirects')
  t.same(poll.json?.response_types, [], 'no response type: it never calls /authorize (RFC 7591 2.1)')
  t.equal(poll.json?.backchannel_token_delivery_mode, 'poll')
  const clientId = String(poll.json?.client_id)
  const secret = String(poll.json?.client_secret)
  t.same((await h.as.findClient(clientId))?.ciba, { deliveryMode: 'poll' })

  const ping = await register(h.url, {
    grant_types: [CIBA],
    response_types: ['code'],
    backchannel_token_delivery_mode: 'ping',
    backchannel_client_notification_endpoint: 'https://agent.example.com/ciba',
  })
  t.equal(ping.status, 201, ping.text)
  t.same(ping.json?.redirect_uris, [])
  t.same(ping.json?.response_types, [], 'a `code` response type sent without the code grant is dropped')
  t.same((await h.as.findClient(String(ping.json?.client_id)))?.ciba, { deliveryMode: 'ping', notificationEndpoint: 'https://agent.example.com/ciba' })

  const refusals: Array<[string, Record<string, unknown>, string]> = [
    ['the code grant without redirect URIs', { grant_types: ['authorization_code', CIBA], backchannel_token_delivery_mode: 'poll' }, 'invalid_redirect_uri'],
    [
      'the code grant with no redirect URI',
      { grant_types: ['authorization_code', CIBA], redirect_uris: [], backchannel_token_delivery_mode: 'poll' },
      'invalid_redirect_uri',
    ],
    ['refresh_token alone', { grant_types: ['refresh_token'] }, 'invalid_client_metadata'],
    ['CIBA-only without a delivery mode', { grant_types: [CIBA] }, 'invalid_client_metadata'],
    ['CIBA-only ping without its endpoint', { grant_types: [CIBA], backchannel_token_delivery_mode: 'ping' }, 'invalid_client_metadata'],
    [
      'CIBA-only public client',
      { grant_types: [CIBA], token_endpoint_auth_method: 'none', backchannel_token_delivery_mode: 'poll' },
      'invalid_client_metadata',
    ],
  ]
  for (const [name, metadata, error] of refusals) {
    const r = await register(h.url, metadata)
    t.equal(r.status, 400, `${name}: ${r.text}`)
    t.equal(r.json?.error, error, name)
  }

  const authorize = await reply(
    fetch(`${h.url}/authorize?${new URLSearchParams({ client_id: clientId, response_type: 'code', scope: 'openid' })}`, { redirect: 'manual' }),
  )
  t.equal(authorize.status, 400, 'a CIBA-only client gets no authorization code: it has nowhere to be sent')
  t.equal(authorize.headers.get('location'), null, 'and the browser is sent nowhere')

  const config = await oidc.discovery(new URL(h.issuer), clientId, secret, oidc.ClientSecretBasic(secret), { execute: [oidc.allowInsecureRequests] })
  const started = await oidc.initiateBackchannelAuthentication(config, { scope: 'openid orders:read', login_hint: 'alice', binding_message: 'Pay 12 EUR' })
  t.equal(started.interval, 1)
  const approval = await h.as.approvals.get(started.auth_req_id.split('.')[0] as string)
  t.equal(approval?.clientId, clientId, 'the request is the registered client’s')
  t.equal(approval?.sub, 'alice')
  await decide(h, started.auth_req_id, 'approved')
  const tokens = await oidc.pollBackchannelAuthenticationGrant(config, started)
  t.equal(tokens.claims()?.sub, 'alice', 'an ID token for alice')
  t.equal(tokens.claims()?.aud, clientId)
  t.equal(tokens.scope, 'openid orders:read')
  t.type(tokens.access_token, 'string')
})
