/**
 * RISC account-disabled refuses new sign-ins through the provider until
 * account-enabled, end to end: a person signs in through node-oidc-provider
 * (test/helpers/upstream-op.ts); the transmitter disables the account (the
 * session the person had ends); signing in again at the provider brings
 * them back to bearward's "You cannot sign in here" page (403), and no code
 * reaches the client; account-enabled lets them in again.
 */
import t from 'tap'
import { ManualClock } from '../../src/clock.js'
import { Browser } from '../helpers/browser.js'
import { authParams, frontYaml, pkce, WEB_CALLBACK } from '../helpers/as-front.js'
import { serveRuntime } from '../helpers/serve-runtime.js'
import { RISC, TestTransmitter } from '../helpers/ssf-transmitter.js'
import { OP_CLIENT_SECRET, startTestOp, type TestOp } from '../helpers/upstream-op.js'
import { upstreamSignIn, type SignInEnding } from '../helpers/upstream-sign-in.js'

const AUDIENCE = 'https://bearward.example.com/ssf'

t.test('account-disabled refuses sign-ins through the provider until account-enabled', async (t) => {
  const clock = new ManualClock(Date.now())
  const made: { op?: TestOp; tx?: TestTransmitter } = {}
  const env: Record<string, string> = { OP_SECRET: OP_CLIENT_SECRET }
  const served = await serveRuntime(
    async (url) => {
      made.op = await startTestOp([`${url}/login/upstream/corp/callback`])
      made.tx = await TestTransmitter.start({ issuer: made.op.issuer, audience: AUDIENCE, clock })
      env.OP_ISSUER = made.op.issuer
      const yaml = await frontYaml({
        asExtra: [
          '  identity_providers:',
          '    - { id: corp, name: Corp SSO, issuer: "${OP_ISSUER}", client_id: bearward, client_secret: "${OP_SECRET}", claims: { email: email } }',
        ].join('\n'),
      })
      return `${yaml}\nsignals:\n  transmitters:\n    - { issuer: "${made.op.issuer}", jwks_uri: "${made.tx.jwksUri}", audience: "${AUDIENCE}", delivery: push }\n`
    },
    { clock, env },
  )
  const { op, tx } = made
  if (op === undefined || tx === undefined) throw new Error('the provider or the transmitter was not made')
  t.teardown(async () => {
    await served.close()
    await op.stop()
    await tx.close()
  })
  const endpoint = `${served.url}/signals/events`
  const person = { format: 'iss_sub', iss: op.issuer, sub: 'dana' }

  const signIn = (browser: Browser): Promise<SignInEnding> => {
    const { challenge } = pkce()
    const start = `${served.url}/authorize?${new URLSearchParams(authParams({ scope: 'openid email orders:read', code_challenge: challenge })).toString()}`
    return upstreamSignIn(browser, start, new URL(WEB_CALLBACK).origin, 'corp', 'dana')
  }

  const first = new Browser()
  const ok = await signIn(first)
  t.equal(ok.kind, 'client', 'dana signs in through corp')
  t.match(await (await first.get(`${served.url}/account`)).text(), '<h1>Your account</h1>', 'and a session: the account page shows')

  const disabled = await tx.push(endpoint, (await tx.set({ event: `${RISC}account-disabled`, body: { reason: 'hijacking' }, subId: person })).jwt)
  t.equal(disabled.status, 202)
  t.equal(await served.store.signals.isDisabled('corp:dana'), true)
  t.notMatch(await (await first.get(`${served.url}/account`)).text(), '<h1>Your account</h1>', 'the session dana had ended: no account page for it')

  const refused = await signIn(new Browser())
  t.equal(refused.kind, 'page', 'no code reaches the client')
  if (refused.kind === 'page') {
    t.equal(refused.status, 403)
    t.match(refused.html, 'You cannot sign in here')
  }

  const enabled = await tx.push(endpoint, (await tx.set({ event: `${RISC}account-enabled`, subId: person })).jwt)
  t.equal(enabled.status, 202)
  t.equal((await signIn(new Browser())).kind, 'client', 'enabled: dana signs in again')
})
