/**
 * bearward's own cookies never cross to an upstream (issue #38): the Cookie
 * field without them, the rest byte for byte, and an upstream Set-Cookie that
 * would set one recognised in every spelling a browser or a parser accepts.
 */
import t from 'tap'
import { Writable } from 'node:stream'
import { csrfCookieName } from '../../src/as/interaction/csrf.js'
import { knownBrowserCookieName } from '../../src/as/interaction/known-browser.js'
import { sessionCookieName } from '../../src/as/interaction/session.js'
import { isOwnCookieName, OWN_COOKIES } from '../../src/http/cookies.js'
import { createLogger } from '../../src/log.js'
import { dropOwnSetCookies, ownCookieSetBy, withoutOwnCookies } from '../../src/gateway/own-cookies.js'

t.test('every cookie name the authorization server sets is in the one list', async (t) => {
  for (const secure of [false, true]) {
    for (const name of [sessionCookieName(secure), csrfCookieName(secure), knownBrowserCookieName(secure)]) t.ok(isOwnCookieName(name), name)
  }
  t.same([...OWN_COOKIES], ['bw_session', 'bw_csrf', 'bw_known', 'bw_upstream', 'bw_admin', 'bw_admin_flow'])
  for (const name of ['bw_session', '__Host-bw_session', '__host-BW_SESSION', '__Secure-bw_known', ' bw_csrf ', '__Secure-__Host-bw_upstream']) {
    t.ok(isOwnCookieName(name), `own: ${name}`)
  }
  for (const name of ['bw_sessions', 'xbw_session', 'bw-session', '__Host-theme', '', 'session']) t.notOk(isOwnCookieName(name), `not own: ${name}`)
})

t.test('withoutOwnCookies keeps every other pair byte for byte and drops a field left empty', async (t) => {
  t.equal(withoutOwnCookies('a=1; b="x y"'), 'a=1; b="x y"', 'no own cookie: the same field')
  t.equal(withoutOwnCookies('a=1; bw_session=s; b=2'), 'a=1; b=2')
  t.equal(withoutOwnCookies('bw_session=s; a=1'), 'a=1')
  t.equal(withoutOwnCookies('a=1;bw_csrf=c'), 'a=1')
  t.equal(withoutOwnCookies('a=1 ;  bw_known=k ;b=%3D'), 'a=1 ;b=%3D')
  t.equal(withoutOwnCookies('__Host-bw_session=s; __HOST-bw_csrf=c; BW_KNOWN=k; bw_upstream'), null)
  // The admin pages' session (a sealed admin token) and pending sign-in never reach an upstream either.
  t.equal(withoutOwnCookies('a=1; bw_admin=sealed.v1.x; __Host-bw_admin_flow=f'), 'a=1')
  t.equal(withoutOwnCookies('bw_session=s;'), null, 'only separators left')
  t.equal(withoutOwnCookies('my_bw_session=1; bw_sessionx=2'), 'my_bw_session=1; bw_sessionx=2', 'longer names are other cookies')
})

t.test('ownCookieSetBy reads the name a browser would store', async (t) => {
  t.equal(ownCookieSetBy('bw_session=x; Path=/'), 'bw_session')
  t.equal(ownCookieSetBy('__Host-bw_session=x; Path=/; Secure'), '__Host-bw_session')
  t.equal(ownCookieSetBy('  BW_CSRF =x'), 'BW_CSRF')
  t.equal(ownCookieSetBy('=bw_session=x; Path=/'), 'bw_session', 'a nameless cookie is sent back as its value')
  t.equal(ownCookieSetBy('bw_known'), 'bw_known', 'no `=`: a nameless cookie too')
  t.equal(ownCookieSetBy('theme=bw_session=x'), null, 'a value is not a name')
  t.equal(ownCookieSetBy('theme=dark; Path=/; bw_session=x'), null, 'attributes are not the pair')
  t.equal(ownCookieSetBy('=theme=dark'), null)
})

t.test('dropOwnSetCookies removes them in place and logs the name at warn, never the value', async (t) => {
  const lines: string[] = []
  const log = createLogger(
    'info',
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString())
        done()
      },
    }),
  )
  const headers = ['Content-Type', 'text/plain', 'Set-Cookie', 'theme=dark', 'SET-COOKIE', '__Host-bw_session=secret-value; Secure', 'set-cookie', 'lang=en']
  dropOwnSetCookies(headers, { log }, 'app')
  t.same(headers, ['Content-Type', 'text/plain', 'Set-Cookie', 'theme=dark', 'set-cookie', 'lang=en'])
  const entry = JSON.parse(lines.join('').trim()) as Record<string, unknown>
  t.equal(entry.level, 40)
  t.equal(entry.route, 'app')
  t.equal(entry.cookie_name, '__Host-bw_session')
  t.notMatch(lines.join(''), /secret-value/)
})
