import t from 'tap'
import { Browser, authorizeAs, frontYaml, pkce, startFront, type Front } from '../../helpers/as-front.js'
import { startUpstream } from '../../helpers/upstream.js'

/**
 * A stranger's client (dynamic registration) names a `backchannel_logout_uri` that bearward
 * itself will POST to: it is held to the metadata-document address rules. An IP literal that is
 * not global unicast (loopback, private, link-local) is refused at registration; a name is judged
 * where it resolves at delivery, so `localhost` (this host) is never connected to: the delivery
 * is dropped at once and counted, and the receiver there sees nothing.
 */

const CALLBACK = 'https://stranger.example.com/cb'

function register(f: Front, body: Record<string, unknown>): Promise<Response> {
  return fetch(`${f.url}/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: [CALLBACK], token_endpoint_auth_method: 'none', scope: 'openid', ...body }),
  })
}

async function startRegistering(): Promise<Front> {
  return startFront(
    await frontYaml({ asExtra: '  registration: { enabled: true, scopes: [openid, orders:read], rate_limit: { per_address: 1000, window: 1h } }' }),
  )
}

t.test('registration refuses a backchannel_logout_uri at a loopback, private or link-local address, or over http', async (t) => {
  const f = await startRegistering()
  t.teardown(() => f.close())
  for (const uri of [
    'https://127.0.0.1/logout',
    'https://10.1.2.3/logout',
    'https://192.168.0.10/logout',
    'https://169.254.169.254/latest',
    'https://[::1]/logout',
    'https://[::ffff:127.0.0.1]/logout',
    'http://app.example.com/logout',
    'https://app.example.com/logout#frag',
    'https://user:pw@app.example.com/logout',
  ]) {
    const res = await register(f, { backchannel_logout_uri: uri })
    t.equal(res.status, 400, uri)
    const body = (await res.json()) as { error?: string; error_description?: string }
    t.equal(body.error, 'invalid_client_metadata', `${uri}: invalid_client_metadata`)
    t.match(body.error_description ?? '', /^backchannel_logout_uri/, `${uri}: the member is named`)
  }
  t.equal(f.store.clients.size, 0, 'no client stored')
  const ok = await register(f, { backchannel_logout_uri: 'https://app.example.com/logout', backchannel_logout_session_required: true })
  t.equal(ok.status, 201, 'an https URL of a public name is accepted')
  const meta = (await ok.json()) as Record<string, unknown>
  t.equal(meta.backchannel_logout_uri, 'https://app.example.com/logout', 'and echoed')
  t.equal(meta.backchannel_logout_session_required, true)
})

t.test('a registered client whose backchannel_logout_uri names this host gets nothing: dropped at delivery, counted', async (t) => {
  // A real server on this host, where the stranger's URI points: it must never be reached.
  const receiver = await startUpstream('this-host')
  t.teardown(() => receiver.close())
  const f = await startRegistering()
  t.teardown(() => f.close())
  const port = new URL(receiver.url).port
  const res = await register(f, { backchannel_logout_uri: `https://localhost:${port}/logout` })
  t.equal(res.status, 201, 'a name is judged where it resolves, at delivery')
  const { client_id: clientId } = (await res.json()) as { client_id: string }

  const b = new Browser()
  const { challenge } = pkce()
  const params = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: CALLBACK,
    scope: 'openid',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: 's',
  }
  const cb = await authorizeAs(b, `${f.url}/authorize?${new URLSearchParams(params)}`)
  t.ok(cb.searchParams.get('code'), 'the stranger got a code (and would get an id_token) in this session')
  const ended = await f.store.sessions.endAllOf('alice')
  t.same(ended[0]?.clients, [clientId], 'the session remembered the client')
  await f.as.sessionEnds.emit({ sub: 'alice', reason: 'admin', sessions: ended, grantsRevoked: null })
  await f.as.backchannelLogout.runOnce()
  t.equal(receiver.seen.length, 0, 'nothing reached this host')
  t.equal(f.as.metrics.backchannelLogouts.get({ outcome: 'dropped' }), 1, 'dropped at once, not retried')
  t.equal(f.as.metrics.backchannelLogouts.get({ outcome: 'failed' }), 0)
  t.ok(
    f.logs.some((l) => l.event === 'backchannel_logout_dropped' && String(l.reason).includes('address refused')),
    'logged with the reason',
  )
})
