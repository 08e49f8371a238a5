import t from 'tap'
import { Browser, authParams, authorizeAs, authorizeUrl, frontYaml, get, startFront } from '../helpers/as-front.js'

/**
 * The client as people see it on the consent and device approval pages: its
 * name, its logo (https or inline, allowed by the page's CSP and nothing
 * more), its privacy policy and terms links (RFC 7591 2).
 */

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(16)]).toString('base64')
const BASE_CSP = "default-src 'none'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'"

const front = await startFront(
  await frontYaml({
    clientsExtra: `    - client_id: branded
      name: Orders Web
      type: public
      redirect_uris: [https://branded.example.com/cb]
      logo_uri: "https://cdn.example.com/orders/logo.png?v=2"
      policy_uri: https://branded.example.com/privacy
      tos_uri: https://branded.example.com/terms
      scopes: [openid, orders:read]
    - client_id: inline
      name: Inline Logo App
      type: public
      redirect_uris: [https://inline.example.com/cb]
      logo_uri: "data:image/png;base64,${PNG}"
      tos_uri: https://inline.example.com/terms
      scopes: [orders:read]
    - client_id: branded-tv
      name: Branded TV
      type: public
      grant_types: [urn:ietf:params:oauth:grant-type:device_code]
      logo_uri: https://img.example.net/tv.webp
      scopes: [orders:read]
`,
  }),
)
t.teardown(() => front.close())

const b = new Browser()
await authorizeAs(b, authorizeUrl(front, authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb', scope: 'orders:read' })))
const cookie = [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ')

t.test('an https logo, policy and terms: shown, and the CSP allows exactly that logo origin', async (t) => {
  const res = await get(authorizeUrl(front, authParams({ client_id: 'branded', redirect_uri: 'https://branded.example.com/cb' })), cookie)
  t.equal(res.status, 200)
  t.match(
    res.text,
    /<div class="client-head"><img class="client-logo" src="https:\/\/cdn\.example\.com\/orders\/logo\.png\?v=2" alt="" width="48" height="48" referrerpolicy="no-referrer"><span class="client"><bdi>Orders Web<\/bdi><\/span><\/div>/,
  )
  t.match(res.text, /Allow <bdi>Orders Web<\/bdi> to access your account\?/)
  t.match(
    res.text,
    /Read <bdi>Orders Web<\/bdi>’s <a href="https:\/\/branded\.example\.com\/privacy" target="_blank" rel="noopener noreferrer">privacy policy<\/a> and <a href="https:\/\/branded\.example\.com\/terms" target="_blank" rel="noopener noreferrer">terms of service<\/a>\./,
  )
  t.equal(
    res.headers.get('content-security-policy'),
    "default-src 'none'; style-src 'self'; img-src 'self' data: https://cdn.example.com; frame-ancestors 'none'; base-uri 'none'",
  )
})

t.test('an inline logo: shown, and the CSP stays as strict as ever (data: only)', async (t) => {
  const res = await get(
    authorizeUrl(front, authParams({ client_id: 'inline', redirect_uri: 'https://inline.example.com/cb', scope: 'orders:read', nonce: undefined })),
    cookie,
  )
  t.equal(res.status, 200)
  t.match(res.text, `src="data:image/png;base64,${PNG}"`)
  t.match(res.text, /Read <bdi>Inline Logo App<\/bdi>’s <a [^>]*>terms of service<\/a>\./)
  t.notMatch(res.text, /privacy policy/)
  t.equal(res.headers.get('content-security-policy'), BASE_CSP)
})

t.test('no logo and no links: no image, no widened CSP', async (t) => {
  const res = await get(authorizeUrl(front, authParams()), cookie)
  t.equal(res.status, 200)
  t.notMatch(res.text, /<img/)
  t.notMatch(res.text, /privacy policy|terms of service/)
  t.equal(res.headers.get('content-security-policy'), BASE_CSP)
})

t.test('the device approval page names the client with its logo', async (t) => {
  // The front-channel harness has no /device_authorization: the pending request is stored as that endpoint would.
  const ok = await front.store.devices.put('device-hash-for-branded-tv-0123456789abcdefgh', {
    clientId: 'branded-tv',
    userCode: 'LMNPQRST',
    scope: 'orders:read',
    status: 'pending',
    sub: null,
    authTime: null,
    expiresAt: Math.floor(front.clock.now() / 1000) + 600,
    intervalSec: 5,
    lastPollMs: 0,
  })
  t.ok(ok)
  const res = await get(`${front.url}/device?user_code=LMNP-QRST`, cookie)
  t.equal(res.status, 200)
  t.match(res.text, /<img class="client-logo" src="https:\/\/img\.example\.net\/tv\.webp"/)
  t.match(res.text, /<span class="client"><bdi>Branded TV<\/bdi><\/span> is asking for access/)
  t.equal(
    res.headers.get('content-security-policy'),
    "default-src 'none'; style-src 'self'; img-src 'self' data: https://img.example.net; frame-ancestors 'none'; base-uri 'none'",
  )
})
