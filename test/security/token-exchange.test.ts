/**
 * Attacks on the token paths #38 changed (RFC 8693 token exchange and the
 * refresh families it starts), by a client holding a person's token.
 *
 * An exchanged family lives as long as the operator's policy for its client
 * does: when `token_exchange` no longer lists the family's audience (or no
 * longer grants refresh tokens), a refresh is refused, as a refresh is capped
 * by the client's current `scopes`. Two servers share one store: the first
 * with the old policy, the second with the new one, as after a reload.
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { ManualClock } from '../../src/clock.js'
import { hashSecret } from '../../src/crypto/secret.js'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { MemoryStore } from '../../src/store/memory.js'
import { API_AUDIENCE, backYaml, harnessOf, tokensFor } from '../helpers/as-back.js'
import { postForm, reply } from '../helpers/http.js'
import { serveRuntime } from '../helpers/serve-runtime.js'

const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange'
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token'
const SECRET = 'exchanger-secret-0123456789abcdefghijklmnop'
const AUTH = `Basic ${Buffer.from(`refresher:${SECRET}`).toString('base64')}`

/** The refresher client with `policy` as its `token_exchange` (grant types fitting it). */
function refresher(hash: string, policy: string | null): string {
  const grants = policy === null ? '[refresh_token]' : '[token-exchange, refresh_token]'
  return `    - { client_id: refresher, type: confidential, secret_hash: "${hash}", grant_types: ${grants}, scopes: [openid, orders:read, orders:write]${policy === null ? '' : `, token_exchange: ${policy}`} }`
}

t.test("an exchanged family ends when the client's token_exchange policy no longer covers it", async (t) => {
  const hash = await hashSecret(SECRET)
  const clock = new ManualClock(Date.parse('2026-01-01T00:00:00Z'))
  const store = new MemoryStore(clock, { sweepIntervalMs: 0 })
  const key = await generatePrivateJwk('ES256')
  const serve = async (policy: string | null) =>
    serveRuntime(await backYaml({ clientsExtra: refresher(hash, policy) }), { clock, store: () => store, signingKey: async () => key })
  const before = await serveRuntime(await backYaml({ clientsExtra: refresher(hash, `{ audiences: ["${API_AUDIENCE}"], refresh_tokens: true }`) }), {
    clock,
    store: () => store,
    signingKey: async () => key,
  })
  t.teardown(() => before.close())
  const h = harnessOf(before)

  const afterPolicies: ReadonlyArray<[string, string | null]> = [
    ['the audience taken out of the policy', '{ audiences: ["${PUBLIC_URL}"], refresh_tokens: true }'],
    ['refresh_tokens turned off', `{ audiences: ["${API_AUDIENCE}"], refresh_tokens: false }`],
    ['the policy removed', null],
  ]
  for (const [what, policy] of afterPolicies) {
    const person = await tokensFor(h)
    const exchanged = await reply(
      postForm(
        `${h.url}/token`,
        { grant_type: EXCHANGE, subject_token_type: ACCESS_TOKEN, subject_token: String(person.access_token), resource: API_AUDIENCE },
        { authorization: AUTH },
      ),
    )
    t.equal(exchanged.status, 200, 'the old policy exchanges')
    const refreshToken = String(exchanged.json?.refresh_token)
    t.not(exchanged.json?.refresh_token, undefined, 'the old policy gave a refresh token')

    const after = await serve(policy)
    const refreshed = await reply(postForm(`${after.publicUrl}/token`, { grant_type: 'refresh_token', refresh_token: refreshToken }, { authorization: AUTH }))
    t.equal(refreshed.status, 400, `${what}: refused (${refreshed.text.slice(0, 200)})`)
    t.equal(refreshed.json?.error, 'invalid_grant', what)
    if (refreshed.status === 200) t.comment(`${what}: got a token for ${String(decodeJwt(String(refreshed.json?.access_token)).aud)}`)
    // Closed after the others: each close closes the shared store.
    t.teardown(() => after.close())
  }
})

t.test('a subject token past its exp, inside the clock skew, is invalid_grant rather than a token with a negative expires_in', async (t) => {
  const hash = await hashSecret(SECRET)
  const served = await serveRuntime(await backYaml({ clientsExtra: refresher(hash, `{ audiences: ["${API_AUDIENCE}"] }`) }), {
    signingKey: () => generatePrivateJwk('ES256'),
  })
  t.teardown(() => served.close())
  const h = harnessOf(served)
  const person = await tokensFor(h)
  const exp = Number(decodeJwt(String(person.access_token)).exp)
  served.clock.set(exp * 1000 + 10_000)
  const r = await reply(
    postForm(
      `${h.url}/token`,
      { grant_type: EXCHANGE, subject_token_type: ACCESS_TOKEN, subject_token: String(person.access_token), resource: API_AUDIENCE },
      { authorization: AUTH },
    ),
  )
  t.equal(r.status, 400, `refused (${r.status === 200 ? `expires_in ${String(r.json?.expires_in)}` : r.text.slice(0, 100)})`)
  t.equal(r.json?.error, 'invalid_grant')
  const cause = served.logs.find((l) => l.msg === 'request refused')?.cause
  t.equal(cause, 'token exchange: subject token past its exp (accepted only inside the clock skew)', 'the cause is logged')
})
