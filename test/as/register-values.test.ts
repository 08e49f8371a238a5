/**
 * Issue #28.5: registration values that broke later. A redirect URI with CR,
 * LF, NUL, U+2028 or U+2029 was accepted and every /authorize of its client
 * then answered 500 (the URI cannot go into a Location header); a client name
 * with bidi overrides or zero-width characters was accepted and shown raw on
 * the consent page. Now each is refused at registration with RFC 7591 3.2.2's
 * codes, a record stored before the rules no longer makes /authorize fail, and
 * every client text on the pages sits inside <bdi>.
 */
import t from 'tap'
import { hashToken } from '../../src/store/hash.js'
import { authParams, authorizeUrl, countCodes, frontYaml, get, loggedIn, pkce, startFront } from '../helpers/as-front.js'

const front = await startFront(
  await frontYaml({ asExtra: '  registration: { enabled: true, scopes: ["orders:read"], rate_limit: { per_address: 1000, window: 1h } }' }),
)
t.teardown(() => front.close())
const codes = countCodes(front.store)
/** Every registration the store keeps goes through clients.put. */
let stored = 0
const putClient = front.store.clients.put.bind(front.store.clients)
front.store.clients.put = async (...args: Parameters<typeof putClient>): Promise<void> => {
  stored += 1
  return putClient(...args)
}

const CLIENT = {
  client_name: 'Desk Tool',
  redirect_uris: ['https://tool.example.com/cb'],
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code'],
  response_types: ['code'],
}

async function register(body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${front.url}/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  return { status: res.status, json: (await res.json()) as Record<string, unknown> }
}

/** The characters of the issue, named (a raw U+2028 in a TAP label would break the stream). */
const BREAKING: ReadonlyArray<[string, string]> = [
  ['CR LF', '\r\n'],
  ['CR', '\r'],
  ['LF', '\n'],
  ['NUL', '\u0000'],
  ['TAB', '\t'],
  ['DEL', '\u007f'],
  ['C1 NEL', '\u0085'],
  ['U+2028', '\u2028'],
  ['U+2029', '\u2029'],
]

t.test('a redirect URI with a control or line-separator character: 400 invalid_redirect_uri, nothing stored', async (t) => {
  const before = stored
  for (const [name, ch] of BREAKING) {
    for (const uri of [`https://evil.example/landing${ch}`, `https://evil.example/land${ch}Set-Cookie:%20x=1`]) {
      const res = await register({ ...CLIENT, redirect_uris: [uri] })
      t.equal(res.status, 400, `${name}: 400, not 201`)
      t.equal(res.json.error, 'invalid_redirect_uri', name)
      t.match(res.json.error_description, /control or line-separator character \(U\+[0-9A-F]{4}\)/, name)
      t.equal(res.json.client_id, undefined, `${name}: no client`)
    }
  }
  t.equal(stored, before, 'nothing was stored')
})

t.test('a post-logout redirect URI or a link with such a character: 400 invalid_client_metadata', async (t) => {
  for (const [name, ch] of BREAKING) {
    for (const key of ['policy_uri', 'tos_uri', 'client_uri', 'logo_uri']) {
      const res = await register({ ...CLIENT, [key]: `https://tool.example.com/x${ch}` })
      t.equal(res.status, 400, `${key} ${name}`)
      t.equal(res.json.error, 'invalid_client_metadata', `${key} ${name}`)
    }
    const res = await register({ ...CLIENT, post_logout_redirect_uris: [`https://tool.example.com/bye${ch}`] })
    t.equal(res.json.error, 'invalid_client_metadata', `post_logout_redirect_uris ${name}`)
  }
  const plainHttp = await register({ ...CLIENT, post_logout_redirect_uris: ['http://tool.example.com/bye'] })
  t.equal(plainHttp.json.error, 'invalid_client_metadata', 'a post-logout URI follows the redirect URI rules (no plain http off loopback)')
})

t.test('client_name and other texts with bidi controls, zero-width or control characters: 400 invalid_client_metadata', async (t) => {
  const texts: Array<[string, string]> = [
    ['RLO', 'Orders \u202Ebew'],
    ['LRE', 'Orders \u202Aweb'],
    ['PDF', 'Orders\u202C'],
    ['LRI', 'Orders \u2066web'],
    ['PDI', 'Orders\u2069'],
    ['ZWSP', 'Pay\u200BPal'],
    ['ZWJ', 'Pay\u200DPal'],
    ['RLM', 'Pay\u200FPal'],
    ['BOM', '\uFEFFPayPal'],
    ['WORD JOINER', 'Pay\u2060Pal'],
    ['U+2028', 'Desk\u2028Tool'],
    ['C1', 'Desk\u009BTool'],
    ['NUL', 'Desk\u0000Tool'],
  ]
  for (const key of ['client_name', 'software_id', 'software_version']) {
    for (const [name, text] of texts) {
      const res = await register({ ...CLIENT, [key]: text })
      t.equal(res.status, 400, `${key} ${name}`)
      t.equal(res.json.error, 'invalid_client_metadata', `${key} ${name}`)
    }
  }
  const contacts = await register({ ...CLIENT, contacts: ['ops@tool.example.com\u202E'] })
  t.equal(contacts.json.error, 'invalid_client_metadata', 'contacts too')
  const rtl = await register({ ...CLIENT, client_name: 'متجر الطلبات' })
  t.equal(rtl.status, 201, 'a right-to-left name without controls is fine')
})

t.test('the old 500 is gone: a client stored before these rules is refused with a page at /authorize', async (t) => {
  const now = Math.floor(front.clock.now() / 1000)
  for (const [name, ch] of BREAKING) {
    const clientId = `legacy-${name.replace(/[^A-Za-z0-9]/g, '')}`
    const uri = `https://evil.example/landing${ch}x`
    await front.store.clients.put({
      clientId,
      secretHash: null,
      registrationTokenHash: hashToken('x'),
      metadata: { ...CLIENT, redirect_uris: [uri], token_endpoint_auth_method: 'none', grant_types: ['authorization_code'], response_types: ['code'] },
      issuedAt: now,
      expiresAt: now + 3600,
    })
    const params = authParams({ client_id: clientId, redirect_uri: undefined, scope: 'orders:read', code_challenge: pkce().challenge })
    const extras: Array<Record<string, string>> = [{}, { response_type: 'token' }]
    for (const extra of extras) {
      const res = await get(authorizeUrl(front, { ...params, ...extra }))
      t.equal(res.status, 400, `${name}: 400, not 500`)
      t.equal(res.headers.get('location'), null, `${name}: no Location`)
      t.match(res.text, /The redirect URI registered for this application cannot be used/, name)
    }
  }
  t.equal(codes.count, 0, 'no code issued')
})

t.test('client text on the pages sits inside <bdi>: a right-to-left name cannot reorder the sentence around it', async (t) => {
  const reg = await register({ ...CLIENT, client_name: 'متجر الطلبات', redirect_uris: ['https://tool.example.com/cb'] })
  t.equal(reg.status, 201)
  const { browser } = await loggedIn(front)
  const url = authorizeUrl(front, authParams({ client_id: String(reg.json.client_id), redirect_uri: 'https://tool.example.com/cb', scope: 'orders:read' }))
  const page = await browser.get(url)
  const html = await page.text()
  t.equal(page.status, 200)
  t.match(html, /<h1>Allow <bdi>متجر الطلبات<\/bdi> to access your account\?<\/h1>/)
  t.match(html, /<bdi>متجر الطلبات<\/bdi> registered itself with this server/)
  t.match(html, /you will be sent to <code><bdi>tool\.example\.com<\/bdi><\/code>/)
  t.match(html, /Only allow this if you trust <bdi>متجر الطلبات<\/bdi>\./)
  t.match(html, /you will go back to <code><bdi>https:\/\/tool\.example\.com<\/bdi><\/code>/)
  // Every occurrence of the name is isolated: none outside a <bdi>.
  const outside = html.replaceAll('<bdi>متجر الطلبات</bdi>', '')
  t.notMatch(outside, /متجر الطلبات/, 'no occurrence of the name outside <bdi>')
})
