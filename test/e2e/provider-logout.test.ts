/**
 * The company's identity provider ends a session, end to end: node-oidc-provider with its
 * Back-Channel Logout feature is the provider (its SSRF guard overridden, as bearward listens on
 * loopback: upstream-op.ts), `identity_providers[].backchannel_logout: true` with
 * `on_logout: grants`. A person signs in through it and an application gets tokens; the person
 * signs out at the provider; the provider POSTs its logout token to bearward, which ends the
 * person's bearward session and withdraws their grants: the access token is refused within 1 s.
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { verifyOwnAccessToken } from '../../src/as/verify-token.js'
import { ManualClock } from '../../src/clock.js'
import { Browser } from '../helpers/browser.js'
import { CLIENT_SECRET, WEB_CALLBACK, authParams, frontYaml, pkce } from '../helpers/as-front.js'
import { eventually } from '../helpers/http.js'
import { serveRuntime } from '../helpers/serve-runtime.js'
import { upstreamSignIn } from '../helpers/upstream-sign-in.js'
import { OP_CLIENT_ID, OP_CLIENT_SECRET, startTestOp, type TestOp } from '../helpers/upstream-op.js'

const PROVIDERS = `  identity_providers:
    - id: corp
      name: Corp SSO
      issuer: \${OP_ISSUER}
      client_id: ${OP_CLIENT_ID}
      client_secret: "\${OP_SECRET}"
      backchannel_logout: true
      on_logout: grants
`

t.test('node-oidc-provider ends the session: bearward’s session and grants end within a second', async (t) => {
  const env: Record<string, string> = { OP_SECRET: OP_CLIENT_SECRET }
  const made: { op?: TestOp } = {}
  const served = await serveRuntime(
    async (url) => {
      made.op = await startTestOp([`${url}/login/upstream/corp/callback`], { backchannelLogoutUri: `${url}/idp/corp/backchannel-logout` })
      env.OP_ISSUER = made.op.issuer
      return frontYaml({ asExtra: PROVIDERS })
    },
    { clock: new ManualClock(Date.now()), env },
  )
  const op = made.op
  if (op === undefined) throw new Error('the provider was not made')
  t.teardown(op.stop)
  t.teardown(served.close)

  const b = new Browser()
  const { challenge, verifier } = pkce()
  const start = `${served.url}/authorize?${new URLSearchParams(authParams({ scope: 'openid orders:read', code_challenge: challenge }))}`
  const end = await upstreamSignIn(b, start, new URL(WEB_CALLBACK).origin, 'corp', 'ann')
  if (end.kind !== 'client') throw new Error(`sign-in ended on a ${end.status} page: ${end.html.slice(0, 300)}`)
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
  t.equal(res.status, 200)
  const tokens = (await res.json()) as { access_token: string; id_token: string }
  t.equal(decodeJwt(tokens.id_token).sub, 'corp:ann')
  t.ok(await verifyOwnAccessToken(served.as, tokens.access_token), 'the access token works')
  const signedIn = async (): Promise<boolean> => /<h1>Your account<\/h1>/.test(await (await b.get(`${served.url}/account`)).text())
  t.ok(await signedIn(), 'signed in at bearward')

  // The person signs out at the provider (its end-session page and confirmation).
  const page = await (await b.get(`${op.issuer}/session/end`)).text()
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(page)?.[1]
  if (xsrf === undefined) throw new Error(`no sign-out form at the provider: ${page.slice(0, 300)}`)
  const action = new URL(/action="([^"]+)"/.exec(page)?.[1] ?? '/session/end/confirm', op.issuer).toString()
  const started = performance.now()
  b.origin = op.issuer
  const confirmed = await b.submit({ action, method: 'POST', fields: { xsrf }, buttons: [] }, { logout: 'yes' })
  t.ok(confirmed.status < 400, `the provider signed the person out (${confirmed.status})`)

  let refusedAt = 0
  const refused = await eventually(
    async () => {
      if ((await verifyOwnAccessToken(served.as, tokens.access_token)) === null) refusedAt = performance.now()
      return refusedAt > 0
    },
    1000,
    5,
  )
  t.ok(refused, 'the access token is refused')
  t.comment(`provider sign-out -> token refused: ${(refusedAt - started).toFixed(1)} ms`)
  t.ok(refusedAt - started < 1000, 'within 1 s')
  t.notOk(await signedIn(), 'the bearward session ended')
  t.ok(
    served.logs.some((l) => l.event === 'provider_logout' && l.provider === 'corp' && l.by === 'sid'),
    'the provider named its session (sid), and bearward ended the sessions of it',
  )
})
