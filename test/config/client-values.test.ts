/**
 * The one set of rules for what a client states about itself (redirect URIs,
 * texts shown to people), and that the config's static clients follow it:
 * a refused value is a positioned load error, as at registration it is a 400.
 */
import t from 'tap'
import { clientTextProblem, redirectUriProblem, uriCharacterProblem } from '../../src/config/client-values.js'
import { at, describe, inspect } from './helpers.js'

/** Characters that broke a Location header or hid what a text says, each named once. */
const CONTROLS: ReadonlyArray<[string, string]> = [
  ['NUL', '\u0000'],
  ['TAB', '\t'],
  ['LF', '\n'],
  ['CR', '\r'],
  ['ESC', '\u001b'],
  ['DEL', '\u007f'],
  ['C1 NEL', '\u0085'],
  ['C1 CSI', '\u009b'],
  ['LINE SEPARATOR', '\u2028'],
  ['PARAGRAPH SEPARATOR', '\u2029'],
]
const BIDI: ReadonlyArray<[string, string]> = [
  ['LRE', '\u202a'],
  ['RLE', '\u202b'],
  ['PDF', '\u202c'],
  ['LRO', '\u202d'],
  ['RLO', '\u202e'],
  ['LRI', '\u2066'],
  ['RLI', '\u2067'],
  ['FSI', '\u2068'],
  ['PDI', '\u2069'],
  ['ALM', '\u061c'],
  ['LRM', '\u200e'],
  ['RLM', '\u200f'],
]
const ZERO_WIDTH: ReadonlyArray<[string, string]> = [
  ['ZWSP', '\u200b'],
  ['ZWNJ', '\u200c'],
  ['ZWJ', '\u200d'],
  ['WORD JOINER', '\u2060'],
  ['BOM', '\ufeff'],
]

t.test('redirect URIs: what is accepted', async (t) => {
  for (const uri of [
    'https://app.example.com/cb',
    'https://app.example.com/cb?tenant=a%20b&x=1',
    'https://app.example.com:8443/cb',
    'http://127.0.0.1/cb',
    'http://127.0.0.1:33418/callback',
    'http://[::1]:9999/cb',
    'http://localhost:3000/cb',
    'com.example.app:/oauth2redirect',
    'com.example.app:/cb',
  ]) {
    t.equal(redirectUriProblem(uri), undefined, uri)
  }
})

t.test('redirect URIs: every refusal says why', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['/callback', /not an absolute URI/],
    ['cb', /not an absolute URI/],
    ['https://app.example.com/cb#top', /fragment/],
    ['https://user:pw@app.example.com/cb', /credentials/],
    ['https://user@app.example.com/cb', /credentials/],
    ['https://@app.example.com/cb', /credentials/],
    ['http://app.example.com/cb', /only accepted on a loopback host/],
    ['http://127.0.0.1.evil.example/cb', /only accepted on a loopback host/],
    ['javascript:alert(1)//', /`javascript:` cannot be a redirect URI/],
    ['data:text/html,x', /`data:` cannot be a redirect URI/],
    ['file:///etc/passwd', /`file:` cannot be a redirect URI/],
    ['myapp:/cb', /reversed domain name/],
    ['https://app.example.com/a b', /contains a space/],
    ['https://app.example.com/é', /U\+00E9; a URI is ASCII/],
    ['https://аpp.example.com/cb', /U\+0430; a URI is ASCII/],
    [`https://app.example.com/${'a'.repeat(2000)}`, /at most 2000 characters/],
  ]
  for (const [uri, why] of cases) t.match(redirectUriProblem(uri), why, JSON.stringify(uri))
  for (const [name, ch] of CONTROLS) {
    const code = `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`
    for (const [where, uri] of [
      ['at the end', `https://app.example.com/cb${ch}`],
      ['in the path', `https://app.example.com/c${ch}b?x=1`],
      ['first', `${ch}https://app.example.com/cb`],
    ]) {
      // The label names the character: a raw U+2028 in a test name would break the TAP stream.
      t.equal(redirectUriProblem(uri ?? ''), `the URI contains a control or line-separator character (${code})`, `${name} ${where}`)
    }
  }
  for (const [name, ch] of [...BIDI, ...ZERO_WIDTH]) t.match(redirectUriProblem(`https://app.example.com/${ch}cb`), /a URI is ASCII/, name)
  // WHATWG URL drops tabs and newlines: the rule must not rely on it.
  t.equal(new URL('https://app.example.com/c\r\nb').href, 'https://app.example.com/cb', 'the URL parser alone would not notice')
})

t.test('the character rule of every client URI (logo, policy, post-logout)', async (t) => {
  t.equal(uriCharacterProblem('https://cdn.example.com/logo.png?v=2'), undefined)
  t.match(uriCharacterProblem('https://cdn.example.com/logo.png\r\nSet-Cookie: x=1'), /U\+000D/)
  t.match(uriCharacterProblem('https://cdn.example.com/\u2028'), /U\+2028/)
})

t.test('client texts: names in any script are fine; controls, bidi controls and invisible characters are refused', async (t) => {
  for (const name of ['Orders Web', 'Café Olé', 'متجر الطلبات', '注文アプリ', 'Tool 🛠️', 'O’Brien & Sons <Ltd>'])
    t.equal(clientTextProblem(name), undefined, name)
  for (const [name, ch] of CONTROLS) t.match(clientTextProblem(`Tool${ch}`), /control or line-separator character/, name)
  for (const [name, ch] of BIDI) t.match(clientTextProblem(`Tool${ch}lanigiro`), /bidirectional-text control character/, name)
  for (const [name, ch] of ZERO_WIDTH) t.match(clientTextProblem(`Pay${ch}Pal`), /invisible zero-width character/, name)
  t.match(clientTextProblem('Tool \ud800'), /unpaired surrogate/)
  t.match(clientTextProblem('Tool \udc00x'), /unpaired surrogate/)
})

/** A config with one public client; `uris` is a YAML flow list's items, `name` a YAML scalar. */
const config = (uris: string, name = 'App'): string => `
authorization_server:
  scopes: { "orders:read": Read }
  clients:
    - client_id: c
      name: ${name}
      type: public
      redirect_uris: [${uris}]
`

t.test('config: static redirect_uris follow the same rules, as positioned load errors', async (t) => {
  const good = inspect(config('https://app.example.com/cb, "http://127.0.0.1:5555/cb", "com.example.app:/cb"'))
  t.same(good.problems, [], describe(good.problems))
  const cases: Array<[string, RegExp]> = [
    ['"https://app.example.com/cb\\r\\nX: y"', /control or line-separator character \(U\+000D\)/],
    ['"https://app.example.com/cb\\0"', /U\+0000/],
    ['"https://app.example.com/cb\\u2028"', /U\+2028/],
    ['"https://app.example.com/cb\\x85"', /U\+0085/],
    ['"http://app.example.com/cb"', /only accepted on a loopback host/],
    ['"myapp:/cb"', /reversed domain name/],
    ['"https://u:p@app.example.com/cb"', /credentials/],
    ['"https://app.example.com/cb#x"', /fragment/],
  ]
  for (const [uri, why] of cases) {
    const { problems } = inspect(config(`https://ok.example.com/cb, ${uri}`))
    const found = at(problems, 'authorization_server.clients[0].redirect_uris[1]')
    t.equal(found.length, 1, `${uri}: ${describe(problems)}`)
    t.match(found[0]?.message, why, uri)
    t.equal(found[0]?.line, 8, `${uri}: the line`)
    t.equal(found[0]?.col, 50, `${uri}: the column of the value`)
  }
})

t.test('config: a client name with bidi controls or invisible characters is a positioned load error', async (t) => {
  for (const [yaml, why] of [
    ['"Orders \\u202Ebew"', /bidirectional-text control character \(U\+202E\)/],
    ['"Pay\\u200BPal"', /zero-width character \(U\+200B\)/],
    ['"Tool\\x07"', /control or line-separator character \(U\+0007\)/],
  ] as const) {
    const { problems } = inspect(config('https://app.example.com/cb', yaml))
    const found = at(problems, 'authorization_server.clients[0].name')
    t.equal(found.length, 1, `${yaml}: ${describe(problems)}`)
    t.match(found[0]?.message, why)
    t.equal(found[0]?.line, 6)
  }
  const fine = inspect(config('https://app.example.com/cb', '"متجر الطلبات"'))
  t.same(fine.problems, [], describe(fine.problems))
})

t.test('config: logo, policy and post-logout URIs with control characters are refused', async (t) => {
  for (const key of ['logo_uri', 'policy_uri', 'tos_uri']) {
    const { problems } = inspect(`${config('https://app.example.com/cb')}      ${key}: "https://app.example.com/x\\r\\ny"\n`)
    t.match(at(problems, `authorization_server.clients[0].${key}`)[0]?.message, /U\+000D/, key)
  }
  const { problems } = inspect(`${config('https://app.example.com/cb')}      post_logout_redirect_uris: ["https://app.example.com/bye\\u2029"]\n`)
  t.match(at(problems, 'authorization_server.clients[0].post_logout_redirect_uris[0]')[0]?.message, /U\+2029/)
})
