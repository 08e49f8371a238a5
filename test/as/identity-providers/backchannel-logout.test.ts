/**
 * `POST /idp/{id}/backchannel-logout` (OIDC Back-Channel Logout 1.0 2.6-2.8) with a provider whose
 * keys the test holds (the rogue provider of upstream-op.ts, signing as itself): a person signs in
 * through it (its id_token carries `sid`), then its logout token ends that bearward session, and
 * with `on_logout: grants` the person's grants (the access token is refused at once). Every
 * attacker's token is refused with 400 invalid_request and ends nothing: forged, replayed, for
 * another audience or from another issuer, with a nonce, with neither sid nor sub, unsigned, HS256
 * with the public key, stale.
 */
import t from 'tap'
import { SignJWT, UnsecuredJWT } from 'jose'
import { ManualClock } from '../../../src/clock.js'
import { BACKCHANNEL_LOGOUT_EVENT } from '../../../src/as/backchannel-logout/logout-token.js'
import { verifyOwnAccessToken } from '../../../src/as/verify-token.js'
import { MemoryStore } from '../../../src/store/memory.js'
import { Browser } from '../../helpers/browser.js'
import { CLIENT_SECRET, WEB_CALLBACK, authParams, frontYaml, pkce } from '../../helpers/as-front.js'
import { serveRuntime } from '../../helpers/serve-runtime.js'
import { upstreamSignIn } from '../../helpers/upstream-sign-in.js'
import { OP_CLIENT_ID, startRogueOp } from '../../helpers/upstream-op.js'

const CLIENT_ORIGIN = new URL(WEB_CALLBACK).origin

const PROVIDERS = `  identity_providers:
    - id: rogue
      name: Rogue SSO
      issuer: \${ROGUE_ISSUER}
      client_id: ${OP_CLIENT_ID}
      client_secret: rogue-secret
      backchannel_logout: true
    - id: strict
      name: Strict SSO
      issuer: \${ROGUE_ISSUER}
      client_id: ${OP_CLIENT_ID}
      client_secret: rogue-secret
      backchannel_logout: true
      on_logout: grants
    - id: quiet
      name: Quiet SSO
      issuer: \${ROGUE_ISSUER}
      client_id: ${OP_CLIENT_ID}
      client_secret: rogue-secret
`

t.test('back-channel logout from an identity provider', async (t) => {
  const rogue = await startRogueOp()
  t.teardown(rogue.stop)
  const clock = new ManualClock(Date.now())
  let made: MemoryStore | null = null
  const served = await serveRuntime(await frontYaml({ asExtra: PROVIDERS }), {
    clock,
    env: { ROGUE_ISSUER: rogue.issuer },
    store: (c) => {
      made = new MemoryStore(c, { sweepIntervalMs: 0 })
      return made
    },
  })
  t.teardown(served.close)
  if (made === null) throw new Error('the store was not made')
  const endpoint = (id: string): string => `${served.url}/idp/${id}/backchannel-logout`
  const now = (): number => Math.floor(clock.now() / 1000)
  const claims = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
    iss: rogue.issuer,
    aud: OP_CLIENT_ID,
    iat: now(),
    exp: now() + 120,
    jti: `jti-${Math.random().toString(36).slice(2)}`,
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    ...over,
  })
  const post = (id: string, token: string, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(endpoint(id), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams({ logout_token: token }).toString(),
    })

  /** Sign in through `provider` with the provider's session `sid`; the browser and the web client's tokens. */
  async function signIn(provider: string, sid: string): Promise<{ b: Browser; access: string }> {
    rogue.claims = { sid }
    const b = new Browser()
    const { challenge, verifier } = pkce()
    const start = `${served.url}/authorize?${new URLSearchParams(authParams({ scope: 'openid orders:read', code_challenge: challenge }))}`
    const end = await upstreamSignIn(b, start, CLIENT_ORIGIN, provider, 'x')
    if (end.kind !== 'client') throw new Error(`sign-in ended on a page: ${end.status}`)
    const res = await fetch(`${served.url}/token`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`web:${CLIENT_SECRET}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: end.url.searchParams.get('code') ?? '',
        redirect_uri: WEB_CALLBACK,
        code_verifier: verifier,
      }),
    })
    const tokens = (await res.json()) as { access_token: string }
    return { b, access: tokens.access_token }
  }
  const signedIn = async (b: Browser): Promise<boolean> => /<h1>Your account<\/h1>/.test(await (await b.get(`${served.url}/account`)).text())

  await t.test('the endpoint exists only for a provider with backchannel_logout: true, and takes POST only', async (t) => {
    t.equal((await post('quiet', await rogue.sign(claims({ sid: 's' })))).status, 404, 'not published for a provider without it')
    const get = await fetch(endpoint('rogue'))
    t.equal(get.status, 405)
  })

  await t.test('a valid logout token naming sid ends that session only: 200, no-store', async (t) => {
    const a = await signIn('rogue', 'idp-session-a')
    const other = await signIn('rogue', 'idp-session-b')
    t.ok((await signedIn(a.b)) && (await signedIn(other.b)), 'both signed in')
    const res = await post('rogue', await rogue.sign(claims({ sid: 'idp-session-a' }), { typ: 'logout+jwt' }))
    t.equal(res.status, 200)
    t.equal(res.headers.get('cache-control'), 'no-store')
    t.equal(await res.text(), '')
    t.notOk(await signedIn(a.b), 'the session of that provider session ended')
    t.ok(await signedIn(other.b), 'the other provider session’s is kept')
    t.ok(await verifyOwnAccessToken(served.as, a.access), 'on_logout: sessions (the default) keeps the grants')
    t.ok(
      served.logs.some((l) => l.event === 'sessions_ended' && l.reason === 'provider_logout' && l.sessions === 1),
      'logged as a provider logout',
    )
  })

  await t.test('a token naming sub alone ends every session of that person', async (t) => {
    const a = await signIn('rogue', 'idp-session-c')
    const b = await signIn('rogue', 'idp-session-d')
    const res = await post('rogue', await rogue.sign(claims({ sub: 'rogue-1' })))
    t.equal(res.status, 200)
    t.notOk(await signedIn(a.b))
    t.notOk(await signedIn(b.b))
  })

  await t.test('on_logout: grants: the person’s grants end too; their access token is refused at once', async (t) => {
    const a = await signIn('strict', 'idp-session-e')
    t.ok(await verifyOwnAccessToken(served.as, a.access), 'the token works')
    const res = await post('strict', await rogue.sign(claims({ sid: 'idp-session-e' })))
    t.equal(res.status, 200)
    t.notOk(await signedIn(a.b), 'signed out')
    t.equal(await verifyOwnAccessToken(served.as, a.access), null, 'the access token is refused')
  })

  await t.test('an attacker’s logout tokens: 400 invalid_request, nothing ended', async (t) => {
    const victim = await signIn('rogue', 'idp-session-v')
    const replayed = await rogue.sign(claims({ sid: 'idp-session-used' }))
    t.equal((await post('rogue', replayed)).status, 200, 'first use')
    const rsaLikeSecret = new TextEncoder().encode(JSON.stringify(rogue.publicJwk))
    const cases: Array<[string, Promise<string> | string]> = [
      ['forged: signed by a key outside the provider’s JWKS', rogue.sign(claims({ sid: 'idp-session-v' }), { key: 'foreign' })],
      ['replayed: the same jti again', replayed],
      ['for another audience', rogue.sign(claims({ sid: 'idp-session-v', aud: 'another-client' }))],
      ['from another issuer', rogue.sign(claims({ sid: 'idp-session-v', iss: 'https://someone-else.example.com' }))],
      ['with a nonce', rogue.sign(claims({ sid: 'idp-session-v', nonce: 'n-1' }))],
      ['with neither sid nor sub', rogue.sign(claims())],
      ['without the back-channel-logout event', rogue.sign(claims({ sid: 'idp-session-v', events: { 'https://example.com/other': {} } }))],
      ['with the event member not an object', rogue.sign(claims({ sid: 'idp-session-v', events: { [BACKCHANNEL_LOGOUT_EVENT]: true } }))],
      ['issued too long ago', rogue.sign(claims({ sid: 'idp-session-v', iat: now() - 3600, exp: now() + 60 }))],
      ['expired', rogue.sign(claims({ sid: 'idp-session-v', iat: now() - 200, exp: now() - 100 }))],
      ['without jti', rogue.sign(claims({ sid: 'idp-session-v', jti: undefined }))],
      ['typed as an access token', rogue.sign(claims({ sid: 'idp-session-v' }), { typ: 'at+jwt' })],
      ['alg none', new UnsecuredJWT(claims({ sid: 'idp-session-v' })).encode()],
      [
        'HS256 with the provider’s public key as the secret',
        new SignJWT(claims({ sid: 'idp-session-v' })).setProtectedHeader({ alg: 'HS256', kid: 'rogue-1' }).sign(rsaLikeSecret),
      ],
      ['not a JWT', 'not-a-jwt'],
    ]
    for (const [label, made] of cases) {
      const res = await post('rogue', await made)
      t.equal(res.status, 400, label)
      t.equal(res.headers.get('cache-control'), 'no-store', `${label}: no-store`)
      const body = (await res.json()) as { error?: string; error_description?: string }
      t.equal(body.error, 'invalid_request', `${label}: invalid_request`)
    }
    t.ok(await signedIn(victim.b), 'the victim is still signed in')
    t.equal((await fetch(endpoint('rogue'), { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status, 400, 'not a form')
    const big = await fetch(endpoint('rogue'), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `logout_token=${'a'.repeat(64 * 1024)}`,
    })
    t.equal(big.status, 413, 'a body over the bound is refused unread')
    t.ok(await signedIn(victim.b), 'still signed in')
  })
})
