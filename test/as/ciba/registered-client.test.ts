/**
 * A client that registers itself (RFC 7591) with the CIBA grant: its metadata is kept and read back
 * as a CIBA client, and it may then ask at /bc-authorize; the grant joins the server metadata.
 */
import t from 'tap'
import { startAs } from '../../helpers/as-back.js'
import { basic } from '../../helpers/client-auth.js'
import { postForm, reply } from '../../helpers/http.js'
import { CIBA } from '../../helpers/ciba.js'

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
