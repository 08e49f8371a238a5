/**
 * Attacks on the admin listener of the real binary (docs/operating.md,
 * Health and Metrics; docs/threat-model.md, Admin listener). It has no
 * authentication, so what guards it is where it listens: its paths must not
 * be answered on the public listener, it must change nothing, and what it
 * shows must hold no credential a request carried.
 */
import t from 'tap'
import { AT_HEADER, accessClaims, serviceToken, signEs256, startTarget, type Target } from '../helpers/attack.js'

let target: Target

t.before(async () => {
  target = await startTarget({
    // A public route at / takes every path no other route does, as a catch-all
    // would: the admin paths must then reach the upstream, never the admin server.
    routes: (upstream) => `
  - name: everything
    match: { path: / }
    upstream: ${upstream}
    public: true
`,
  })
})
t.teardown(() => target.close())

const ADMIN_PATHS = ['/healthz', '/readyz', '/metrics']

t.test('the admin paths are not served on the public listener', async (t) => {
  for (const path of ADMIN_PATHS) {
    const seen = target.upstream.seen.length
    const res = await fetch(`${target.url}${path}`)
    const body = await res.text()
    t.notMatch(body, /bearward_requests_total|"status":"(ok|ready)"/, `${path}: no admin answer on the public port`)
    t.equal(target.upstream.seen.length, seen + 1, `${path}: the public catch-all route took it to the upstream`)
    t.equal(target.upstream.seen.at(-1)?.url, path)
  }
})

t.test('the admin listener answers GET and HEAD only, and nothing but its three paths', async (t) => {
  for (const path of ADMIN_PATHS) {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
      const res = await fetch(`${target.bin.admin}${path}`, { method, body: method === 'DELETE' ? null : 'x' })
      await res.arrayBuffer()
      t.equal(res.status, 405, `${method} ${path}: 405`)
      t.equal(res.headers.get('allow'), 'GET, HEAD', `${method} ${path}: Allow`)
    }
    const head = await fetch(`${target.bin.admin}${path}`, { method: 'HEAD' })
    t.equal(head.status, 200, `HEAD ${path}`)
    t.equal(await head.text(), '', `HEAD ${path}: no body`)
  }
  for (const path of ['/', '/admin', '/healthz/', '/metrics/../config', '/debug/pprof', '/reload']) {
    const res = await fetch(`${target.bin.admin}${path}`)
    await res.arrayBuffer()
    t.equal(res.status, 404, `GET ${path}: 404`)
  }
})

t.test('/metrics and /readyz hold no token or secret', async (t) => {
  const token = await serviceToken(target)
  const forged = signEs256(target.key, { ...AT_HEADER, kid: 'nope' }, accessClaims(target))
  t.equal((await fetch(`${target.url}/orders/1`, { headers: { authorization: `Bearer ${token}` } })).status, 200)
  t.equal((await fetch(`${target.url}/orders/2`, { headers: { authorization: `Bearer ${forged}` } })).status, 401)
  t.not((await fetch(`${target.url}/orders/3?access_token=${token}`)).status, 200, 'a token in the query, where the route takes none')
  const metrics = await (await fetch(`${target.bin.admin}/metrics`)).text()
  const ready = await (await fetch(`${target.bin.admin}/readyz`)).text()
  t.match(metrics, /bearward_requests_total\{outcome="200",route="orders"\}/, 'the requests were counted')
  for (const [name, text] of [
    ['/metrics', metrics],
    ['/readyz', ready],
  ] as const) {
    for (const secret of [token, token.split('.')[2] ?? token, forged.split('.')[1] ?? forged, target.secret]) {
      t.notOk(text.includes(secret), `${name} holds no token part or client secret`)
    }
    t.notMatch(text, /\/orders\/[0-9]/, `${name} holds no request path`)
  }
})
