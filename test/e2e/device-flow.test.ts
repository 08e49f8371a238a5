import t from 'tap'
import { startBin, tempConfig } from '../helpers/bin.js'
import { startUpstream } from '../helpers/upstream.js'
import { Browser, parseForms } from '../helpers/browser.js'
import { asConfigYaml, DEMO_PASSWORD } from '../helpers/as-config.js'
import { freePort } from '../helpers/http.js'
import { pollOnce, pollUntilDecided, startDevice, type DeviceStart } from '../helpers/device-client.js'

/** The demo config with a device code lifetime and a 1 s polling interval. */
const deviceYaml = (port: number, upstream: string, ttl: string): Promise<string> =>
  asConfigYaml({ port, upstream, override: { authorization_server: { device: { ttl, interval: '1s' } } } })

/** A person at a browser: open the verification page, confirm the code, log in, decide. Returns the last page's text. */
async function personApproves(start: DeviceStart, decision: 'allow' | 'deny', typeCode = false): Promise<string> {
  const browser = new Browser()
  const origin = new URL(start.verification_uri).origin
  let url = typeCode ? start.verification_uri : start.verification_uri_complete
  let { res, url: at } = await browser.follow(await browser.get(url), url, origin)
  for (let step = 0; step < 6; step++) {
    const html = await res.text()
    const forms = parseForms(html, at).filter((f) => f.method === 'POST')
    if (forms.length === 0) return html
    const login = forms.find((f) => 'password' in f.fields)
    const consent = forms.find((f) => f.buttons.some((b) => b.name === 'decision'))
    const code = forms.find((f) => 'user_code' in f.fields)
    let sent: Response
    if (login) sent = await browser.submit(login, { username: 'alice', password: DEMO_PASSWORD })
    else if (consent) sent = await browser.submit(consent, { decision })
    else if (code) {
      const button = code.buttons[0]
      // Typed the way people type: lower case, no dash.
      sent = await browser.submit(code, {
        user_code: typeCode ? start.user_code.replace('-', '').toLowerCase() : (code.fields.user_code ?? ''),
        ...(button ? { [button.name]: button.value } : {}),
      })
    } else return html
    ;({ res, url: at } = await browser.follow(sent, at, origin))
    url = at
  }
  throw new Error('the device page flow did not finish')
}

t.test('device authorization grant as a command-line tool and a person would', async (t) => {
  const up = await startUpstream('orders')
  const port = await freePort()
  // A lifetime no step of the happy path can outlast on a busy machine; the
  // expiry is tested on an instance of its own below.
  const cfg = await tempConfig(await deviceYaml(port, up.url, '10m'))
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })

  await t.test('start, poll (pending), approve through the page, poll (tokens), call the route', async (t) => {
    const start = await startDevice(bin.url, 'orders:read')
    t.match(start.user_code, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/)
    t.equal(start.verification_uri, `${bin.url}/device`)
    t.equal(start.verification_uri_complete, `${bin.url}/device?user_code=${start.user_code}`)
    t.equal(start.interval, 1)
    const pending = await pollOnce(bin.url, start)
    t.equal(pending.status, 400)
    t.match(pending.body, { error: 'authorization_pending' })
    const page = await personApproves(start, 'allow', true)
    t.match(page, /approved|connected|done|success/i, 'the person is told it worked')
    const done = await pollUntilDecided(bin.url, start)
    t.equal(done.status, 200)
    t.equal(done.headers.get('cache-control'), 'no-store')
    const tokens = done.body as { access_token: string; token_type: string; refresh_token?: string }
    t.equal(tokens.token_type, 'Bearer')
    const route = await fetch(`${bin.url}/orders/7`, { headers: { authorization: `Bearer ${tokens.access_token}` } })
    t.equal(route.status, 200, 'the device token opens the protected route')
    const again = await pollUntilDecided(bin.url, start)
    t.equal(again.status, 400, 'tokens are handed out once')
    t.match(again.body, { error: 'invalid_grant' })
  })

  await t.test('deny', async (t) => {
    const start = await startDevice(bin.url, 'orders:read')
    await personApproves(start, 'deny')
    const res = await pollOnce(bin.url, start)
    t.equal(res.status, 400)
    t.match(res.body, { error: 'access_denied' })
  })

  await t.test('polling faster than the interval gets slow_down', async (t) => {
    const start = await startDevice(bin.url, 'orders:read')
    const first = await pollOnce(bin.url, start)
    t.match(first.body, { error: 'authorization_pending' })
    const second = await pollOnce(bin.url, start)
    t.equal(second.status, 400)
    t.match(second.body, { error: 'slow_down' })
  })

  await t.test('expiry: a device that keeps polling is told expired_token once the lifetime has passed', async (t) => {
    const short = await tempConfig(await deviceYaml(await freePort(), up.url, '2s'))
    const shortBin = await startBin(short.file)
    t.teardown(async () => {
      await shortBin.stop()
      await short.cleanup()
    })
    const start = await startDevice(shortBin.url, 'orders:read')
    t.equal(start.expires_in, 2)
    const began = Date.now()
    const res = await pollUntilDecided(shortBin.url, start)
    t.equal(res.status, 400)
    t.match(res.body, { error: 'expired_token' })
    t.ok(Date.now() - began >= 1000, 'not before the lifetime has (nearly) passed')
  })
})
