import t from 'tap'
import { appendQuery, matchRedirectUri } from '../../src/as/interaction/redirect-uri.js'
import { formatUserCode, normalizeUserCode } from '../../src/tokens/user-code.js'
import { escapeHtml, html } from '../../src/as/views/html.js'

/** The pure pieces under /authorize and /device: redirect URI matching, query building, user codes, escaping. */

t.test('matchRedirectUri: exact string match (RFC 9700 4.1.3)', async (t) => {
  const one = ['https://app.example.com/cb']
  t.equal(matchRedirectUri(one, 'https://app.example.com/cb', false), 'https://app.example.com/cb')
  t.equal(matchRedirectUri(one, undefined, false), 'https://app.example.com/cb', 'omitted with exactly one registered')
  t.equal(matchRedirectUri([...one, 'https://app.example.com/cb2'], undefined, false), null, 'omitted with two registered')
  t.equal(matchRedirectUri([], undefined, false), null)
  for (const bad of [
    'https://app.example.com/cb/',
    'https://app.example.com/cb?',
    'https://app.example.com/cb#',
    'https://app.example.com:443/cb',
    'https://APP.example.com/cb',
    'https://app.example.com/c',
    ' https://app.example.com/cb',
  ]) {
    t.equal(matchRedirectUri(one, bad, false), null, bad)
  }
})

t.test('matchRedirectUri: loopback port exception (RFC 8252 7.3)', async (t) => {
  const registered = ['http://127.0.0.1/cb', 'http://[::1]:1234/cb?x=1']
  t.equal(matchRedirectUri(registered, 'http://127.0.0.1:49152/cb', true), 'http://127.0.0.1:49152/cb', 'the requested URI is what is used')
  t.equal(matchRedirectUri(registered, 'http://127.0.0.1:65535/cb', true), 'http://127.0.0.1:65535/cb')
  t.equal(matchRedirectUri(registered, 'http://[::1]:9/cb?x=1', true), 'http://[::1]:9/cb?x=1')
  t.equal(matchRedirectUri(registered, 'http://[::1]/cb?x=1', true), 'http://[::1]/cb?x=1')
  for (const bad of [
    'http://[::1]:9/cb',
    'http://127.0.0.1:65536/cb',
    'http://127.0.0.1:/cb',
    'http://127.0.0.1:123456/cb',
    'http://127.0.0.1.evil.example/cb',
    'http://127.0.0.1:80@evil.example/cb',
    'http://localhost:49152/cb',
    'http://[::1]:9/cb?x=2',
  ]) {
    t.equal(matchRedirectUri(registered, bad, true), null, bad)
  }
  t.equal(matchRedirectUri(['http://localhost:8080/cb'], 'http://localhost:9090/cb', true), null, 'localhost is not exempt')
  t.equal(matchRedirectUri(['https://127.0.0.1:8080/cb'], 'https://127.0.0.1:9090/cb', true), null, 'only http loopback URIs')
  t.equal(matchRedirectUri(registered, 'http://127.0.0.1:49152/cb', false), null, 'not for a confidential (web) client: native apps only')
  t.equal(matchRedirectUri(registered, 'http://127.0.0.1/cb', false), 'http://127.0.0.1/cb', 'its exact URI still matches')
})

t.test('appendQuery keeps the registered query and drops a fragment', async (t) => {
  t.equal(appendQuery('https://a.example/cb', [['code', 'x y']]), 'https://a.example/cb?code=x%20y')
  t.equal(appendQuery('https://a.example/cb?t=a%20b', [['code', '1']]), 'https://a.example/cb?t=a%20b&code=1')
  t.equal(appendQuery('https://a.example/cb?', [['code', '1']]), 'https://a.example/cb?code=1')
  t.equal(appendQuery('https://a.example/cb?a=1&', [['code', '1']]), 'https://a.example/cb?a=1&code=1')
  t.equal(appendQuery('https://a.example/cb#f', [['state', '&=?#']]), 'https://a.example/cb?state=%26%3D%3F%23')
  t.equal(appendQuery('com.example.app:/cb', [['code', '1']]), 'com.example.app:/cb?code=1', 'private-use schemes too')
})

t.test('user codes: forgiving input, one normalized form', async (t) => {
  for (const typed of ['BCDF-GHJK', 'bcdfghjk', ' bcdf ghjk ', 'BcDf-gHjK', 'BCDF--GHJK', 'B C D F G H J K', 'bcdf\tghjk']) {
    t.equal(normalizeUserCode(typed), 'BCDFGHJK', JSON.stringify(typed))
  }
  for (const bad of ['', 'BCDF-GHJ', 'BCDF-GHJKL', 'BCDF_GHJK', 'BCDF.GHJK', 'ÄBCD-GHJK', 'BCDF-GHJ<']) {
    t.equal(normalizeUserCode(bad), null, JSON.stringify(bad))
  }
  t.equal(formatUserCode('BCDFGHJK'), 'BCDF-GHJK')
})

t.test('html escapes every interpolated value', async (t) => {
  t.equal(escapeHtml(`<a href="x" onclick='y'>&</a>`), '&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;')
  const name = '<img src=x onerror=alert(1)>'
  t.equal(html`<p title="${name}">${name}</p>`.toString(), '<p title="&lt;img src=x onerror=alert(1)&gt;">&lt;img src=x onerror=alert(1)&gt;</p>')
  t.equal(html`<ul>${['<a>', html`<li>${'&'}</li>`]}</ul>`.toString(), '<ul>&lt;a&gt;<li>&amp;</li></ul>', 'nested html is kept, text in lists escaped')
  t.equal(html`${null}${undefined}${false}${0}`.toString(), '0')
})
