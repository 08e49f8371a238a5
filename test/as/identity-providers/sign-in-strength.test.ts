/**
 * A sign-in through an upstream identity provider carries the provider's
 * `amr` and `acr` when its id_token has them (and only well-formed ones),
 * into our id_token and access token; without them, none are made up.
 *
 * The provider's `acr` means what the provider means: one spelt like ours
 * (`pwd`, `mfa`, `phr`) counts as ours only through the entry's
 * `acr_values` map. Unmapped, it is left out of our tokens, so it meets
 * neither `acr_values=mfa` at /authorize nor a gateway route demanding `mfa`.
 */
import { createServer } from 'node:http'
import t from 'tap'
import { decodeJwt } from 'jose'
import { ManualClock } from '../../../src/clock.js'
import { authParams, Browser, CLIENT_SECRET, frontYaml, pkce, WEB_CALLBACK } from '../../helpers/as-front.js'
import { listen, postForm, reply } from '../../helpers/http.js'
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
// The upstream of a gateway route that demands an `mfa` sign-in (RFC 9470 step-up).
let payHits = 0
const payUpstream = createServer((_req, res) => {
  payHits++
  res.end('paid')
})
const pay = await listen(payUpstream)
t.teardown(() => new Promise<void>((resolve) => payUpstream.close(() => resolve())))
const PAY_ROUTE = `  - { name: pay, match: { path: /pay }, upstream: "${pay.url}", audience: "\${PUBLIC_URL}", authentication: { acr: [mfa] } }`
const served = await serveRuntime(await frontYaml({ asExtra: PROVIDER, topExtra: PAY_ROUTE }), {
  clock: new ManualClock(Date.now()),
  env: { OP_ISSUER: op.issuer },
})
t.teardown(served.close)

type Served = Awaited<ReturnType<typeof serveRuntime>>

/** Sign in at the provider from an authorization request of `web`; the tokens of the code, and the browser (its session). */
async function signInViaProvider(at: Served = served): Promise<{ body: Record<string, unknown>; browser: Browser }> {
  const { challenge, verifier } = pkce()
  const start = `${at.url}/authorize?${new URLSearchParams(authParams({ code_challenge: challenge }))}`
  const browser = new Browser()
  const ending = await upstreamSignIn(browser, start, new URL(WEB_CALLBACK).origin, 'corp', 'anyone')
  if (ending.kind !== 'client') throw new Error(`stopped at ${ending.url}: ${ending.status}`)
  const code = ending.url.searchParams.get('code') ?? ''
  const basic = { authorization: `Basic ${Buffer.from(`web:${CLIENT_SECRET}`).toString('base64')}` }
  const r = await reply(postForm(`${at.url}/token`, { grant_type: 'authorization_code', code, redirect_uri: WEB_CALLBACK, code_verifier: verifier }, basic))
  if (r.status !== 200 || r.json === null) throw new Error(`token: ${r.status} ${r.text}`)
  return { body: r.json, browser }
}

async function tokensViaProvider(): Promise<Record<string, unknown>> {
  return (await signInViaProvider()).body
}

/** Where /authorize sends the signed-in person back to when the client asks for `acr_values` without showing a page. */
async function silentAuthorize(at: Served, browser: Browser, acrValues: string): Promise<URL> {
  const res = await browser.get(`${at.url}/authorize?${new URLSearchParams(authParams({ acr_values: acrValues, prompt: 'none' }))}`)
  return new URL(res.headers.get('location') ?? '', at.url)
}

/** GET /pay (a route demanding acr mfa) with `token`: the status and whether the upstream was reached. */
async function callPay(at: Served, token: string): Promise<{ status: number; challenge: string; reached: boolean }> {
  const before = payHits
  const res = await fetch(`${at.url}/pay`, { headers: { authorization: `Bearer ${token}` } })
  await res.text()
  return { status: res.status, challenge: res.headers.get('www-authenticate') ?? '', reached: payHits > before }
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

t.test("a provider's unmapped `mfa` is not ours: left out of our tokens, it meets neither /authorize nor a step-up route", async (t) => {
  for (const acr of ['mfa', 'phr', 'pwd']) {
    op.claims = { amr: ['pwd'], acr }
    const { body, browser } = await signInViaProvider()
    const at = decodeJwt(String(body.access_token))
    t.notOk('acr' in at, `${acr}: no acr in the access token`)
    t.notOk('acr' in decodeJwt(String(body.id_token)), `${acr}: nor in the id_token`)
    const back = await silentAuthorize(served, browser, 'mfa')
    t.equal(back.searchParams.get('error'), 'login_required', `${acr}: acr_values=mfa is not met by the session`)
    t.equal(back.searchParams.get('code'), null)
    const call = await callPay(served, String(body.access_token))
    t.equal(call.status, 401, `${acr}: the step-up route refuses the token`)
    t.match(call.challenge, /insufficient_user_authentication/)
    t.notOk(call.reached, 'nothing reached the upstream')
  }
})

t.test('acr_values maps a provider’s value to ours; then it meets mfa, and an unmapped one still does not', async (t) => {
  const mapped = await serveRuntime(
    await frontYaml({ asExtra: `${PROVIDER}      acr_values: { "urn:corp:loa:2": mfa, "corp-phr": phr }\n`, topExtra: PAY_ROUTE }),
    { clock: new ManualClock(Date.now()), env: { OP_ISSUER: op.issuer } },
  )
  t.teardown(mapped.close)
  op.claims = { amr: ['pwd', 'otp'], acr: 'urn:corp:loa:2' }
  const strong = await signInViaProvider(mapped)
  t.equal(decodeJwt(String(strong.body.access_token)).acr, 'mfa', 'mapped to our mfa')
  t.equal(decodeJwt(String(strong.body.id_token)).acr, 'mfa')
  const back = await silentAuthorize(mapped, strong.browser, 'mfa')
  t.type(back.searchParams.get('code'), 'string', 'acr_values=mfa is met')
  const call = await callPay(mapped, String(strong.body.access_token))
  t.equal(call.status, 200, 'the step-up route lets it through')
  t.ok(call.reached)

  op.claims = { acr: 'corp-phr' }
  const phr = await signInViaProvider(mapped)
  t.equal(decodeJwt(String(phr.body.access_token)).acr, 'phr', 'phr meets a route demanding mfa, as ours does')
  t.equal((await callPay(mapped, String(phr.body.access_token))).status, 200)

  op.claims = { acr: 'mfa' }
  const literal = await signInViaProvider(mapped)
  t.notOk('acr' in decodeJwt(String(literal.body.access_token)), 'the literal mfa is not in the map: left out')
  t.equal((await callPay(mapped, String(literal.body.access_token))).status, 401)
})
