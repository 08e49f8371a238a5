/**
 * Request trailers (RFC 9110 6.5) as a way around the header rules
 * (docs/threat-model.md, Request handling): a chunked request may end with
 * fields, and some servers and frameworks merge trailer fields into the
 * headers. A client must not get an identity or forwarding header to the
 * upstream that way, on a public route or a protected one.
 */
import t from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { asConfig, DEMO_SECRET } from '../helpers/as-config.js'
import { rawHttp } from '../helpers/attack.js'
import { startBin, tempConfig } from '../helpers/bin.js'
import { basic } from '../helpers/client-auth.js'
import { closeServer, freePort, listen, postForm } from '../helpers/http.js'

t.test('request trailers naming identity or forwarding headers never reach the upstream', async (t) => {
  const seen: Array<{ url: string; rawHeaders: string[]; rawTrailers: string[]; body: string }> = []
  const up = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      seen.push({ url: req.url ?? '', rawHeaders: req.rawHeaders, rawTrailers: req.rawTrailers, body: Buffer.concat(chunks).toString() })
      res.end('ok')
    })
  })
  const { url } = await listen(up)
  const port = await freePort()
  const config = await asConfig({
    port,
    upstream: url,
    routes: [
      { name: 'app', match: { path: '/app' }, upstream: url, public: true },
      { name: 'protected', match: { path: '/protected' }, upstream: url, scopes: { '*': ['orders:read'] } },
    ],
  })
  const cfg = await tempConfig(config)
  const bin = await startBin(cfg.file)
  t.teardown(async () => {
    await bin.stop()
    void closeServer(up)
    await cfg.cleanup()
  })
  const tokenRes = await postForm(
    `${bin.url}/token`,
    { grant_type: 'client_credentials', scope: 'orders:read' },
    { authorization: basic('service', DEMO_SECRET) },
  )
  t.equal(tokenRes.status, 200, 'a token for the protected route')
  const token = ((await tokenRes.json()) as { access_token: string }).access_token

  const trailers = 'X-Auth-Subject: admin\r\nX_Auth_Client_Id: evil\r\nX-Auth-Scope: admin\r\nX-Forwarded-For: 6.6.6.6\r\nAuthorization: Bearer forged\r\n'
  for (const [label, path, auth] of [
    ['public route', '/app/t', ''],
    ['protected route', '/protected/t', `Authorization: Bearer ${token}\r\n`],
  ] as const) {
    const before = seen.length
    const answer = await rawHttp(
      bin.url,
      `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Transfer-Encoding: chunked\r\nTrailer: X-Auth-Subject, X-Forwarded-For\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n${trailers}\r\n`,
    )
    t.equal(answer.status, 200, `${label}: answered`)
    const got = seen.slice(before)
    t.equal(got.length, 1, `${label}: one request upstream`)
    const fields = [...(got[0]?.rawHeaders ?? []), ...(got[0]?.rawTrailers ?? [])]
    const named = (n: string): string[] => fields.filter((_, i) => i % 2 === 1 && (fields[i - 1] ?? '').toLowerCase().replaceAll('_', '-') === n)
    t.same(got[0]?.rawTrailers, [], `${label}: no trailer fields forwarded`)
    t.equal(got[0]?.body, 'abc', `${label}: the body arrives`)
    t.notOk(fields.includes('admin') || fields.includes('evil'), `${label}: no client-sent identity value anywhere`)
    t.same(named('x-forwarded-for'), ['127.0.0.1'], `${label}: X-Forwarded-For is the real peer only`)
    t.notOk(
      fields.some((f) => f.includes('forged')),
      `${label}: no client-sent Authorization`,
    )
  }
})
