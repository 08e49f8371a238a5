/**
 * RFC 8707 resource indicators at the authorization server: one rule for
 * `resource` at /authorize and /token (absolute URI, no fragment, a resource
 * this server issues for, one per request), and the route resource
 * identifiers (RFC 9728) among the resources it knows.
 */
import t from 'tap'
import { jwtVerify, createLocalJWKSet } from 'jose'
import { checkResource } from '../../src/as/resource.js'
import { OAuthError } from '../../src/errors.js'
import { serveRuntime } from '../helpers/serve-runtime.js'
import { API_AUDIENCE, basic, codeParams, mintCode, send, startAs, token } from '../helpers/as-back.js'

t.test('the resources a server issues for include each route resource identifier', async (t) => {
  const built = await serveRuntime(
    `
public_url: https://as.example.com
authorization_server: { clients: [] }
routes:
  - name: mcp
    match: { path: /mcp }
    upstream: http://127.0.0.1:3000
  - name: api
    match: { path: /api }
    upstream: http://127.0.0.1:3000
    audience: https://api.example.com
    protected_resource: { resource: https://api.example.com/v1 }
  - name: hidden
    match: { path: /hidden }
    upstream: http://127.0.0.1:3000
    protected_resource: false
`,
  )
  t.teardown(() => built.close())
  t.same([...built.as.resources].sort(), ['https://api.example.com', 'https://api.example.com/v1', 'https://as.example.com', 'https://as.example.com/mcp'])
  t.equal(checkResource('https://as.example.com/mcp', built.as), 'https://as.example.com/mcp')
  const refused = (value: string): string => {
    try {
      checkResource(value, built.as)
      return 'accepted'
    } catch (err) {
      return err instanceof OAuthError ? `${err.error}: ${err.description ?? ''}` : 'other'
    }
  }
  t.equal(refused('https://as.example.com/hidden'), 'invalid_target: The requested resource is not known to this server', 'a hidden route names no resource')
  t.equal(refused('https://as.example.com/mcp#x'), 'invalid_target: The resource must be an absolute URI without a fragment')
  t.equal(refused('/mcp'), 'invalid_target: The resource must be an absolute URI without a fragment')
  t.equal(refused('as.example.com/mcp'), 'invalid_target: The resource must be an absolute URI without a fragment')
})

t.test('/token: resource may repeat on the wire, and is then refused as invalid_target', async (t) => {
  const h = await startAs()
  t.teardown(() => h.close())
  const m2 = await mintCode(h)
  const form = new URLSearchParams(codeParams(m2))
  form.append('resource', API_AUDIENCE)
  form.append('resource', h.issuer)
  const res = await tokenRaw(h, form)
  t.equal(res.status, 400)
  t.same(res.json, { error: 'invalid_target', error_description: 'Only one resource may be requested' })
  const fragment = await token(h, 'web', { ...codeParams(m2), resource: `${API_AUDIENCE}#f` })
  t.same(fragment.json, { error: 'invalid_target', error_description: 'The resource must be an absolute URI without a fragment' })
  const ok = await token(h, 'web', { ...codeParams(m2), resource: API_AUDIENCE })
  t.equal(ok.status, 200, 'the refusals left the code redeemable')
  const keys = createLocalJWKSet((await send(`${h.url}/jwks.json`)).json as { keys: [] })
  const { payload } = await jwtVerify(String(ok.json?.access_token), keys, { currentDate: new Date(h.clock.now()) })
  t.equal(payload.aud, API_AUDIENCE)
})

/** POST /token as client `web` with a form that may repeat parameters. */
async function tokenRaw(h: Awaited<ReturnType<typeof startAs>>, form: URLSearchParams): Promise<{ status: number; json: unknown }> {
  const r = await send(`${h.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic('web') },
    body: form.toString(),
  })
  return { status: r.status, json: r.json }
}
