/**
 * The adversarial pass on back-channel logout (issue #43), both ways:
 * - as the relying party of identity providers: a logout token valid at one provider (same
 *   issuer, keys and client_id as another, the worst case) posted at the other provider's
 *   endpoint ends none of the first provider's sessions (the `sid` index is per provider); a
 *   token whose `sid` and `sub` name different people ends only the `sid`'s session;
 * - as the provider: a stranger's `backchannel_logout_uri` spelled as an IPv4 address in another
 *   notation, the unspecified address, or an IPv6 form that embeds loopback is refused at
 *   registration like the plain forms.
 */
import t from 'tap'
import { BACKCHANNEL_LOGOUT_EVENT } from '../../src/as/backchannel-logout/logout-token.js'
import { ManualClock } from '../../src/clock.js'
import { Browser, authParams, frontYaml, pkce, startFront, WEB_CALLBACK } from '../helpers/as-front.js'
import { serveRuntime } from '../helpers/serve-runtime.js'
import { upstreamSignIn } from '../helpers/upstream-sign-in.js'
import { OP_CLIENT_ID, startRogueOp } from '../helpers/upstream-op.js'

const CLIENT_ORIGIN = new URL(WEB_CALLBACK).origin

const PROVIDERS = `  identity_providers:
    - id: rogue
      name: Rogue SSO
      issuer: \${ROGUE_ISSUER}
      client_id: ${OP_CLIENT_ID}
      client_secret: rogue-secret
      backchannel_logout: true
    - id: twin
      name: Twin SSO
      issuer: \${ROGUE_ISSUER}
      client_id: ${OP_CLIENT_ID}
      client_secret: rogue-secret
      backchannel_logout: true
`

t.test('provider logout: a token is judged against the endpoint’s provider and its own sid', async (t) => {
  const rogue = await startRogueOp()
  t.teardown(rogue.stop)
  const clock = new ManualClock(Date.now())
  const served = await serveRuntime(await frontYaml({ asExtra: PROVIDERS }), { clock, env: { ROGUE_ISSUER: rogue.issuer } })
  t.teardown(served.close)
  const now = (): number => Math.floor(clock.now() / 1000)
  const claims = (over: Record<string, unknown>): Record<string, unknown> => ({
    iss: rogue.issuer,
    aud: OP_CLIENT_ID,
    iat: now(),
    exp: now() + 120,
    jti: `jti-${Math.random().toString(36).slice(2)}`,
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    ...over,
  })
  const post = async (id: string, token: string): Promise<number> =>
    (
      await fetch(`${served.url}/idp/${id}/backchannel-logout`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ logout_token: token }).toString(),
      })
    ).status
  async function signIn(provider: string, sid: string, login: string): Promise<Browser> {
    rogue.claims = { sid }
    const b = new Browser()
    const { challenge } = pkce()
    const start = `${served.url}/authorize?${new URLSearchParams(authParams({ scope: 'openid', code_challenge: challenge }))}`
    const end = await upstreamSignIn(b, start, CLIENT_ORIGIN, provider, login)
    if (end.kind !== 'client') throw new Error(`sign-in ended on a page: ${end.status}`)
    return b
  }
  const signedIn = async (b: Browser): Promise<boolean> => /<h1>Your account<\/h1>/.test(await (await b.get(`${served.url}/account`)).text())

  await t.test("a token valid at rogue, posted at twin's endpoint, ends none of rogue's sessions", async (t) => {
    const a = await signIn('rogue', 'shared-sid', 'x')
    t.equal(await post('twin', await rogue.sign(claims({ sid: 'shared-sid' }))), 200, 'valid for twin (same issuer, keys, client_id)')
    t.ok(await signedIn(a), "rogue's session with that sid is kept: sids are looked up per provider")
    t.ok(
      served.logs.some((l) => l.event === 'provider_logout' && l.provider === 'twin' && l.sessions === 0),
      'logged: nothing ended at twin',
    )
  })

  await t.test("a token whose sid is one person's and sub another's ends only the sid's session", async (t) => {
    const a = await signIn('rogue', 'sid-of-a', 'x')
    const b = await signIn('rogue', 'sid-of-b', 'x')
    t.equal(await post('rogue', await rogue.sign(claims({ sid: 'sid-of-a', sub: 'someone-else' }))), 200)
    t.notOk(await signedIn(a), "the sid's session ended")
    t.ok(await signedIn(b), 'the session of another provider session is kept')
  })
})

t.test('registration refuses a backchannel_logout_uri in other spellings of a local address', async (t) => {
  const f = await startFront(await frontYaml({ asExtra: '  registration: { enabled: true, scopes: [openid], rate_limit: { per_address: 1000, window: 1h } }' }))
  t.teardown(() => f.close())
  for (const uri of [
    'https://2130706433/logout', // 127.0.0.1 as one number
    'https://0x7f.0.0.1/logout',
    'https://0177.0.0.1/logout',
    'https://127.1/logout',
    'https://0.0.0.0/logout',
    'https://[::]/logout',
    'https://[fe80::1]/logout',
    'https://[::ffff:7f00:1]/logout',
    'https://[64:ff9b::7f00:1]/logout',
    'https://[2002:7f00:1::]/logout',
    'https://[fd00::1]/logout',
  ]) {
    const res = await fetch(`${f.url}/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        redirect_uris: ['https://stranger.example.com/cb'],
        token_endpoint_auth_method: 'none',
        scope: 'openid',
        backchannel_logout_uri: uri,
      }),
    })
    t.equal(res.status, 400, uri)
    t.equal(((await res.json()) as { error?: string }).error, 'invalid_client_metadata', uri)
  }
  t.equal(f.store.clients.size, 0, 'no client stored')
})
