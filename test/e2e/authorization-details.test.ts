/**
 * RFC 9396 end to end, through `bin/bearward`, driven by oauth4webapi: the
 * code flow with `authorization_details` (login and consent in the test's
 * browser), the token response naming the details, a route that demands a
 * `payment_initiation` entry and forwards it to an upstream that reads the
 * header, refresh narrowing to the other entry (which the payment route then
 * refuses), for JWT and opaque access tokens.
 */
import t from 'tap'
import * as oauth from 'oauth4webapi'
import { asConfig, DEMO_PASSWORD, DEMO_SECRET, demoClient } from '../helpers/as-config.js'
import { startBinOrCleanUp, tempConfig } from '../helpers/bin.js'
import { Browser, authorizeAsPerson } from '../helpers/browser.js'
import { freePort } from '../helpers/http.js'
import { startUpstream } from '../helpers/upstream.js'

t.setTimeout(120_000)

const PAYMENT = {
  type: 'payment_initiation',
  actions: ['initiate'],
  instructedAmount: { currency: 'EUR', amount: '123.50' },
  creditorName: 'Merchant A',
  creditorAccount: { iban: 'DE02100100109307118603' },
}
const ACCOUNT = { type: 'account_information', locations: ['https://bank.example.com/accounts'] }

const PAYMENT_SCHEMA = {
  type: 'object',
  required: ['type', 'instructedAmount'],
  properties: {
    type: { const: 'payment_initiation' },
    actions: { type: 'array', items: { enum: ['initiate', 'status', 'cancel'] } },
    instructedAmount: { type: 'object', required: ['currency', 'amount'], properties: { currency: { type: 'string' }, amount: { type: 'string' } } },
    creditorName: { type: 'string' },
    creditorAccount: { type: 'object', properties: { iban: { type: 'string' } } },
  },
  additionalProperties: false,
}

for (const format of ['jwt', 'opaque'] as const) {
  t.test(`${format}: authorization_details from the consent page to the upstream`, async (t) => {
    // The upstream acts on the header: it answers with the amount it was told it may pay.
    const up = await startUpstream('payments', (req, res) => {
      const header = req.headers['x-payment-details']
      const entries = typeof header === 'string' ? (JSON.parse(header) as Array<{ instructedAmount?: { amount?: string } }>) : []
      const body = JSON.stringify({ paid: entries.map((e) => e.instructedAmount?.amount) })
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(body)
    })
    const port = await freePort()
    const config = await asConfig({
      port,
      upstream: up.url,
      format,
      routes: [
        {
          name: 'payments',
          match: { path: '/payments' },
          upstream: up.url,
          token: format === 'opaque' ? 'any' : 'jwt',
          authorization_details: { type: 'payment_initiation' },
          identity_headers: { authorization_details: 'X-Payment-Details' },
        },
      ],
      override: {
        authorization_server: {
          authorization_details_types: {
            payment_initiation: { schema: PAYMENT_SCHEMA },
            account_information: { schema: { type: 'object', required: ['locations'] } },
          },
        },
      },
    })
    demoClient(config, 'web').authorization_details_types = ['payment_initiation', 'account_information']
    const cfg = await tempConfig(config)
    const bin = await startBinOrCleanUp(cfg.file, async () => {
      await up.close()
      await cfg.cleanup()
    })
    t.teardown(async () => {
      await bin.stop()
      await up.close()
      await cfg.cleanup()
    })

    const insecure = { [oauth.allowInsecureRequests]: true }
    const issuer = new URL(bin.url.replace(/\/$/, ''))
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }))
    t.same(as.authorization_details_types_supported, ['payment_initiation', 'account_information'], 'RFC 9396 10 metadata')

    const client: oauth.Client = { client_id: 'web' }
    const auth = oauth.ClientSecretBasic(DEMO_SECRET)
    const redirectUri = 'http://127.0.0.1:5555/callback'
    const verifier = oauth.generateRandomCodeVerifier()
    const state = oauth.generateRandomState()
    const url = new URL(String(as.authorization_endpoint))
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope: 'orders:read',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      authorization_details: JSON.stringify([PAYMENT, ACCOUNT]),
    }).toString()

    const callback = await authorizeAsPerson(new Browser(), url.href, { username: 'alice', password: DEMO_PASSWORD })
    const params = oauth.validateAuthResponse(as, client, callback, state)
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, auth, params, redirectUri, verifier, insecure),
    )
    t.same(tokens.authorization_details, [PAYMENT, ACCOUNT], 'RFC 9396 7: the token response')

    const pay = await fetch(`${bin.url}/payments/1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.access_token}`, 'x-payment-details': JSON.stringify([{ instructedAmount: { amount: '1000000' } }]) },
    })
    t.equal(pay.status, 200)
    t.same(await pay.json(), { paid: ['123.50'] }, "the upstream read the token's payment entry, not the client's header")
    t.same(JSON.parse(String(up.seen.at(-1)?.headers['x-payment-details'])), [PAYMENT], 'only the route type is forwarded')

    // Refresh narrowed to the account entry: that token holds no payment and the payment route refuses it.
    const narrowed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, auth, String(tokens.refresh_token), {
        ...insecure,
        additionalParameters: { authorization_details: JSON.stringify([ACCOUNT]) },
      }),
    )
    t.same(narrowed.authorization_details, [ACCOUNT], 'narrowed at refresh')
    const before = up.seen.length
    const refused = await fetch(`${bin.url}/payments/1`, { method: 'POST', headers: { authorization: `Bearer ${narrowed.access_token}` } })
    t.equal(refused.status, 403)
    t.match(refused.headers.get('www-authenticate'), /error="insufficient_authorization_details".*authorization_details_type="payment_initiation"/)
    t.equal(up.seen.length, before, 'nothing reached the upstream')

    const widened = await oauth.refreshTokenGrantRequest(as, client, auth, String(narrowed.refresh_token), {
      ...insecure,
      additionalParameters: { authorization_details: JSON.stringify([{ ...PAYMENT, instructedAmount: { currency: 'EUR', amount: '9999.00' } }]) },
    })
    t.equal(widened.status, 400)
    t.match(await widened.json(), { error: 'invalid_authorization_details' })
  })
}
