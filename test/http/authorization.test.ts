/**
 * One Authorization header parser for both faces (src/http/authorization.ts): the
 * gateway's routes and the authorization server's UserInfo answer a malformed
 * or repeated header the same way, 400 invalid_request with a Bearer
 * challenge (RFC 6750 2.1, 3.1; docs/architecture.md "Bearer credentials").
 * Before, UserInfo answered `Bearer a b` 401 invalid_token and took the first
 * of two Authorization headers.
 */
import t from 'tap'
import { request } from 'node:http'
import { startAs, tokensFor } from '../helpers/as-back.js'
import { startGateway } from '../gateway/fixture.js'

interface Answer {
  status: number
  error: unknown
  challenge: string | undefined
}

/** GET `url` with these Authorization header lines, each sent as its own field line. */
function withAuthorization(url: string, values: readonly string[]): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[]> = values.length === 0 ? {} : { authorization: values.length === 1 ? (values[0] as string) : [...values] }
    const req = request(url, { headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || 'null') as Record<string, unknown> | null
        const challenge = res.headers['www-authenticate']
        resolve({ status: res.statusCode ?? 0, error: body?.error, challenge: Array.isArray(challenge) ? challenge.join(', ') : challenge })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

t.test('both faces answer a malformed or repeated Authorization header alike', async (t) => {
  const as = await startAs()
  t.teardown(() => as.close())
  const gw = await startGateway({
    routes: (up) => `
  - name: orders
    match: { path: /orders }
    upstream: ${up}
    scopes: { GET: ["orders:read"] }
`,
  })
  t.teardown(() => gw.close())
  const asToken = String((await tokensFor(as, { scope: 'openid orders:read' })).access_token)
  const gwToken = await gw.mint({ scope: 'orders:read' })
  const faces = [
    { face: 'gateway', url: `${gw.url}/orders`, token: gwToken },
    { face: 'userinfo', url: `${as.url}/userinfo`, token: asToken },
  ]

  for (const { face, url, token } of faces) {
    t.equal((await withAuthorization(url, [`Bearer ${token}`])).status, 200, `${face}: a good token is taken (the check is fair)`)
    const seenBefore = gw.upstream.seen.length
    const refusals: Array<[string, string[]]> = [
      ['a token with a space (Bearer a b)', [`Bearer ${token} b`]],
      ['the scheme alone', ['Bearer']],
      ['the scheme and spaces only', ['Bearer    ']],
      ['a character outside b64token', [`Bearer ${token}"`]],
      ['two Authorization headers, both good', [`Bearer ${token}`, `Bearer ${token}`]],
      ['two Authorization headers, a good one second', ['Bearer x', `Bearer ${token}`]],
    ]
    for (const [what, values] of refusals) {
      const r = await withAuthorization(url, values)
      t.equal(r.status, 400, `${face}, ${what}: 400`)
      t.equal(r.error, 'invalid_request', `${face}, ${what}: invalid_request`)
      t.match(r.challenge, /^Bearer realm="bearward", error="invalid_request"/, `${face}, ${what}: a Bearer challenge naming the error`)
    }
    t.equal(gw.upstream.seen.length, seenBefore, `${face}: nothing refused reached the upstream`)

    const none = await withAuthorization(url, [])
    t.equal(none.status, 401, `${face}: no credentials is 401`)
    t.equal(none.error, undefined, `${face}: with no error code (RFC 6750 3.1)`)
    const basic = await withAuthorization(url, ['Basic d2ViOnNlY3JldA=='])
    t.equal(basic.status, 401, `${face}: another scheme is no bearer token: 401`)
    t.equal(basic.error, undefined, `${face}: and no error code`)
    const unknown = await withAuthorization(url, ['Bearer eyJhbGciOiJFUzI1NiJ9.e30.c2ln'])
    t.equal(unknown.status, 401, `${face}: a well-formed unknown token is 401`)
    t.equal(unknown.error, 'invalid_token', `${face}: invalid_token`)
  }
})
