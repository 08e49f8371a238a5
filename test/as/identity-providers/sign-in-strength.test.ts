/**
 * A sign-in through an upstream identity provider carries the provider's
 * `amr` and `acr` when its id_token has them (and only well-formed ones),
 * into our id_token and access token; without them, none are made up.
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { ManualClock } from '../../../src/clock.js'
import { authParams, Browser, CLIENT_SECRET, frontYaml, pkce, WEB_CALLBACK } from '../../helpers/as-front.js'
import { postForm, reply } from '../../helpers/http.js'
import { serveRuntime } from '../../helpers/serve-runtime.js'
import { startRogueOp } from '../../helpers/upstream-op.js'
import { upstreamSignIn } from '../../helpers/upstream-sign-in.js'

const PROVIDER = `  identity_providers:
    - id: corp
      name: Corp SSO
      issuer: \${OP_ISSUER}
      client_id: bearward
      client_secret: op-secret
`

const op = await startRogueOp()
t.teardown(op.stop)
const served = await serveRuntime(await frontYaml({ asExtra: PROVIDER }), { clock: new ManualClock(Date.now()), env: { OP_ISSUER: op.issuer } })
t.teardown(served.close)

/** Sign in at the provider from an authorization request of `web`; the tokens of the code. */
async function tokensViaProvider(): Promise<Record<string, unknown>> {
  const { challenge, verifier } = pkce()
  const start = `${served.url}/authorize?${new URLSearchParams(authParams({ code_challenge: challenge }))}`
  const ending = await upstreamSignIn(new Browser(), start, new URL(WEB_CALLBACK).origin, 'corp', 'anyone')
  if (ending.kind !== 'client') throw new Error(`stopped at ${ending.url}: ${ending.status}`)
  const code = ending.url.searchParams.get('code') ?? ''
  const basic = { authorization: `Basic ${Buffer.from(`web:${CLIENT_SECRET}`).toString('base64')}` }
  const r = await reply(postForm(`${served.url}/token`, { grant_type: 'authorization_code', code, redirect_uri: WEB_CALLBACK, code_verifier: verifier }, basic))
  if (r.status !== 200 || r.json === null) throw new Error(`token: ${r.status} ${r.text}`)
  return r.json
}

t.test("the provider's amr and acr pass into our tokens", async (t) => {
  op.claims = { amr: ['pwd', 'otp'], acr: 'urn:example:loa:2' }
  const body = await tokensViaProvider()
  const id = decodeJwt(String(body.id_token))
  t.same(id.amr, ['pwd', 'otp'])
  t.equal(id.acr, 'urn:example:loa:2')
  t.type(id.auth_time, 'number')
  const at = decodeJwt(String(body.access_token))
  t.same(at.amr, ['pwd', 'otp'])
  t.equal(at.acr, 'urn:example:loa:2')
})

t.test('a provider that says nothing: no amr, no acr, auth_time still', async (t) => {
  op.claims = {}
  const id = decodeJwt(String((await tokensViaProvider()).id_token))
  t.notOk('amr' in id)
  t.notOk('acr' in id)
  t.type(id.auth_time, 'number')
})

t.test('malformed values are dropped, never passed on', async (t) => {
  op.claims = { amr: 'pwd', acr: { level: 3 } }
  const id = decodeJwt(String((await tokensViaProvider()).id_token))
  t.notOk('amr' in id)
  t.notOk('acr' in id)
})
