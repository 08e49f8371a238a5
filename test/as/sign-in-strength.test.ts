/**
 * How and when a person signed in, over HTTP: the session records it, the
 * id_token, the access token (JWT and opaque, through introspection) and
 * every refreshed token carry `auth_time`, `amr` and `acr`; `/authorize`
 * honours `max_age` (0: always sign in again) and `acr_values` (a sign-in
 * too weak is asked for more, or refused to the client, never ignored).
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { STRONGER_SIGN_IN } from '../../src/as/interaction/authorization-steps.js'
import { epochSeconds } from '../../src/clock.js'
import { hashSecret } from '../../src/crypto/secret.js'
import { hashToken } from '../../src/store/hash.js'
import type { SessionRecord } from '../../src/store/types.js'
import { randomToken } from '../../src/crypto/random.js'
import {
  ALICE_PASSWORD,
  authorizeAs,
  authorizeUrl,
  authParams,
  Browser,
  CLIENT_SECRET,
  countCodes,
  formWith,
  frontYaml,
  get,
  pkce,
  startFront,
  WEB_CALLBACK,
  type Front,
} from '../helpers/as-front.js'
import { postForm, reply } from '../helpers/http.js'

const PASSKEYS = '  webauthn: { rp_id: localhost, origins: ["http://localhost:8080"] }\n'
/** A resource server that may introspect. */
const RS = `    - client_id: rs
      type: confidential
      secret_hash: "${await hashSecret(CLIENT_SECRET)}"
      grant_types: [client_credentials]
      scopes: [orders:read]
      introspect: true
`
const yaml = await frontYaml({ asExtra: PASSKEYS, clientsExtra: RS })
const front: Front = await startFront(yaml)
t.teardown(() => front.close())

const BASIC = { authorization: `Basic ${Buffer.from(`web:${CLIENT_SECRET}`).toString('base64')}` }
const RS_BASIC = { authorization: `Basic ${Buffer.from(`rs:${CLIENT_SECRET}`).toString('base64')}` }
const cookieOf = (b: Browser): string => [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ')

/** A code for `web` through the pages (signing in with the password when asked), exchanged at /token. */
async function tokensThroughPages(f: Front, b: Browser, over: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const { verifier, challenge } = pkce()
  const callback = await authorizeAs(b, authorizeUrl(f, authParams({ code_challenge: challenge, ...over })))
  const code = callback.searchParams.get('code')
  if (code === null) throw new Error(`no code: ${callback}`)
  const r = await reply(postForm(`${f.url}/token`, { grant_type: 'authorization_code', code, redirect_uri: WEB_CALLBACK, code_verifier: verifier }, BASIC))
  if (r.status !== 200 || r.json === null) throw new Error(`token: ${r.status} ${r.text}`)
  return r.json
}

/** A browser holding a session made as a sign-in of that strength would make it (the passkey ceremony itself runs in Chromium). */
async function sessionOf(f: Front, strength: Pick<SessionRecord, 'amr' | 'acr'>, authTime = epochSeconds(f.clock)): Promise<Browser> {
  const id = randomToken()
  await f.store.sessions.put(hashToken(id), { sub: 'alice', username: 'alice', authTime, csrf: randomToken(), ...strength }, 3600)
  const b = new Browser()
  b.cookies.set('bw_session', id)
  return b
}

t.test('a password sign-in: amr pwd, acr pwd and auth_time in the id_token, the access token and every refresh', async (t) => {
  const b = new Browser()
  const signedInAt = epochSeconds(front.clock)
  const body = await tokensThroughPages(front, b, { scope: 'openid orders:read offline_access', prompt: 'consent' })
  const id = decodeJwt(String(body.id_token))
  t.same(id.amr, ['pwd'])
  t.equal(id.acr, 'pwd')
  t.equal(id.auth_time, signedInAt)
  const at = decodeJwt(String(body.access_token))
  t.same(at.amr, ['pwd'])
  t.equal(at.acr, 'pwd')
  t.equal(at.auth_time, signedInAt)

  front.clock.advance(120_000)
  const r = await reply(postForm(`${front.url}/token`, { grant_type: 'refresh_token', refresh_token: String(body.refresh_token) }, BASIC))
  t.equal(r.status, 200)
  const refreshed = decodeJwt(String(r.json?.access_token))
  t.equal(refreshed.auth_time, signedInAt, 'a refresh keeps the original sign-in time')
  t.same(refreshed.amr, ['pwd'])
  t.equal(refreshed.acr, 'pwd')
  const refreshedId = decodeJwt(String(r.json?.id_token))
  t.equal(refreshedId.auth_time, signedInAt)
  t.equal(refreshedId.acr, 'pwd')

  const answer = await reply(postForm(`${front.url}/introspect`, { token: String(r.json?.refresh_token), token_type_hint: 'refresh_token' }, RS_BASIC))
  t.equal(answer.json?.auth_time, signedInAt, 'introspecting the refresh token tells the sign-in too')
  t.same(answer.json?.amr, ['pwd'])
})

t.test('a passkey session (amr hwk user mfa, acr phr) meets acr_values=mfa and its tokens say so', async (t) => {
  const b = await sessionOf(front, { amr: ['hwk', 'user', 'mfa'], acr: 'phr' })
  const body = await tokensThroughPages(front, b, { acr_values: 'mfa', prompt: 'consent' })
  const id = decodeJwt(String(body.id_token))
  t.same(id.amr, ['hwk', 'user', 'mfa'])
  t.equal(id.acr, 'phr')
  const at = decodeJwt(String(body.access_token))
  t.same(at.amr, ['hwk', 'user', 'mfa'])
  t.equal(at.acr, 'phr')
})

t.test('acr_values above the sign-in: the person is sent to set up a factor that meets it, and no code is issued', async (t) => {
  // Alice has a password only: a password sign-in cannot meet mfa, so she is led to the set-up
  // mfa.methods offers (test/as/acr-enrolment.test.ts walks it), never back to the same login.
  const codes = countCodes(front.store)
  const b = await sessionOf(front, { amr: ['pwd'], acr: 'pwd' })
  const url = authorizeUrl(front, authParams({ acr_values: 'mfa', prompt: 'consent' }))
  const res = await b.get(url)
  t.equal(res.status, 302)
  t.match(res.headers.get('location') ?? '', /^account\?mfa=setup&request=.*#totp$/, 'to the set-up, carrying the authorization')
  t.equal(codes.count, 0, 'no code was stored')

  await t.test('prompt=none: login_required to the client', async (t) => {
    const res = await get(authorizeUrl(front, authParams({ acr_values: 'phr', prompt: 'none' })), cookieOf(b))
    t.equal(res.status, 302)
    const loc = new URL(res.headers.get('location') ?? '')
    t.equal(loc.origin + loc.pathname, WEB_CALLBACK)
    t.equal(loc.searchParams.get('error'), 'login_required')
    t.equal(codes.count, 0)
  })

  await t.test('a value this server does not know and the session does not carry: access_denied, never a code', async (t) => {
    const res = await get(authorizeUrl(front, authParams({ acr_values: 'urn:example:gold' })), cookieOf(b))
    t.equal(res.status, 302)
    t.equal(new URL(res.headers.get('location') ?? '').searchParams.get('error'), 'access_denied')
    t.equal(codes.count, 0)
  })

  await t.test('acr_values=pwd, or a list with pwd in it, is met by the password', async (t) => {
    const body = await tokensThroughPages(front, b, { acr_values: 'urn:example:gold pwd', prompt: 'consent' })
    t.equal(decodeJwt(String(body.id_token)).acr, 'pwd')
  })
})

t.test('when nothing offered here meets acr_values=mfa: access_denied to the client', async (t) => {
  const f = await startFront(await frontYaml({ asExtra: '  mfa: { methods: [passkey] }\n' }))
  t.teardown(() => f.close())
  const codes = countCodes(f.store)
  const b = await sessionOf(f, { amr: ['pwd'], acr: 'pwd' })
  const res = await get(authorizeUrl(f, authParams({ acr_values: 'mfa' })), cookieOf(b))
  t.equal(res.status, 302)
  const loc = new URL(res.headers.get('location') ?? '')
  t.equal(loc.searchParams.get('error'), 'access_denied')
  t.equal(loc.searchParams.get('state'), authParams().state)
  t.equal(codes.count, 0)
})

t.test('acr_values the request cannot carry are invalid_request', async (t) => {
  const b = await sessionOf(front, { amr: ['pwd'], acr: 'pwd' })
  for (const bad of ['mfa\u0001', Array.from({ length: 11 }, (_, i) => `v${i}`).join(' '), 'x'.repeat(201)]) {
    const res = await get(authorizeUrl(front, authParams({ acr_values: bad })), cookieOf(b))
    t.equal(res.status, 302)
    t.equal(new URL(res.headers.get('location') ?? '').searchParams.get('error'), 'invalid_request', JSON.stringify(bad.slice(0, 20)))
  }
})

t.test('a session of an older version (no amr, no acr) meets no acr value but still signs in without one', async (t) => {
  const b = await sessionOf(front, {})
  const weak = await get(authorizeUrl(front, authParams({ acr_values: 'pwd' })), cookieOf(b))
  t.equal(weak.status, 200)
  t.match(weak.text, STRONGER_SIGN_IN)
  const res = await get(authorizeUrl(front, authParams({ client_id: 'first', redirect_uri: 'https://first.example.com/cb' })), cookieOf(b))
  t.equal(res.status, 302)
  t.type(new URL(res.headers.get('location') ?? '').searchParams.get('code'), 'string')
})

t.test('max_age', async (t) => {
  const first = { client_id: 'first', redirect_uri: 'https://first.example.com/cb' }
  await t.test('max_age=0 asks for a sign-in even from a session made this second', async (t) => {
    const codes = countCodes(front.store)
    const b = await sessionOf(front, { amr: ['pwd'], acr: 'pwd' })
    const url = authorizeUrl(front, authParams({ ...first, max_age: '0' }))
    const res = await b.get(url)
    t.equal(res.status, 200)
    const form = formWith(await res.text(), url, 'password')
    t.equal(codes.count, 0)
    front.clock.advance(1000)
    const signedInAt = epochSeconds(front.clock)
    const done = await b.submit(form, { username: 'alice', password: ALICE_PASSWORD })
    t.equal(done.status, 303)
    const loc = new URL(done.headers.get('location') ?? '')
    t.equal(loc.origin, 'https://first.example.com', 'the fresh sign-in satisfies it')
    t.equal(codes.count, 1)
    const record = await front.store.codes.take(hashToken(loc.searchParams.get('code') ?? ''))
    t.equal(record.status === 'taken' && record.record.authTime, signedInAt, 'the code carries the new sign-in time')
    t.same(record.status === 'taken' && record.record.amr, ['pwd'])
  })
  await t.test('a session older than max_age is asked again; a younger one is not', async (t) => {
    const b = await sessionOf(front, { amr: ['pwd'], acr: 'pwd' }, epochSeconds(front.clock) - 61)
    const old = await get(authorizeUrl(front, authParams({ ...first, max_age: '60' })), cookieOf(b))
    t.equal(old.status, 200)
    t.match(old.text, 'name="password"')
    const young = await get(authorizeUrl(front, authParams({ ...first, max_age: '61' })), cookieOf(b))
    t.equal(young.status, 302)
    t.type(new URL(young.headers.get('location') ?? '').searchParams.get('code'), 'string')
  })
})

t.test('opaque access tokens: introspection answers auth_time, amr and acr; metadata lists the acr values', async (t) => {
  const f = await startFront(await frontYaml({ asExtra: `${PASSKEYS}  access_token: { format: opaque }\n`, clientsExtra: RS }))
  t.teardown(() => f.close())
  const b = await sessionOf(f, { amr: ['swk', 'user', 'mfa'], acr: 'phr' }, epochSeconds(f.clock) - 5)
  const body = await tokensThroughPages(f, b, { prompt: 'consent' })
  t.notOk(String(body.access_token).includes('.'))
  const answer = await reply(postForm(`${f.url}/introspect`, { token: String(body.access_token) }, RS_BASIC))
  t.equal(answer.json?.active, true)
  t.equal(answer.json?.auth_time, epochSeconds(f.clock) - 5)
  t.same(answer.json?.amr, ['swk', 'user', 'mfa'])
  t.equal(answer.json?.acr, 'phr')

  const cc = await reply(
    postForm(`${f.url}/token`, { grant_type: 'client_credentials' }, { authorization: `Basic ${Buffer.from(`robot:${CLIENT_SECRET}`).toString('base64')}` }),
  )
  const robot = await reply(postForm(`${f.url}/introspect`, { token: String(cc.json?.access_token) }, RS_BASIC))
  t.equal(robot.json?.active, true)
  t.notOk('auth_time' in (robot.json ?? {}) || 'amr' in (robot.json ?? {}) || 'acr' in (robot.json ?? {}), "a client's own token tells no sign-in")

  const meta = await reply(fetch(`${f.url}/.well-known/openid-configuration`))
  t.same(meta.json?.acr_values_supported, ['pwd', 'mfa', 'phr'])
  t.ok((meta.json?.claims_supported as string[] | undefined)?.includes('amr'))
})
