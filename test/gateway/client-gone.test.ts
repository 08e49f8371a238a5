/**
 * A client that leaves while its token is being judged: the gateway decides
 * asynchronously when a signature needs keys not fetched yet, and by the time
 * the decision arrives the client's response has closed. Nothing may be sent
 * upstream for it, and nothing may be left counted in flight (a reload or
 * shutdown would wait its full timeout for it).
 */
import t from 'tap'
import { createServer, request as httpRequest, type ServerResponse } from 'node:http'
import { mint, newKey, startGateway } from './fixture.js'
import { closeServer, listen, eventually } from '../helpers/http.js'

const ISSUER = 'https://idp.example'
const AUDIENCE = 'https://api.example'

t.test('a request whose client left while its keys were fetched is not forwarded', async (t) => {
  const key = await newKey('ES256', 'corp-1')
  // A JWKS endpoint that holds every fetch until released.
  const held: ServerResponse[] = []
  let fetches = 0
  const jwks = createServer((_req, res) => {
    fetches++
    held.push(res)
  })
  const jwksAt = await listen(jwks)
  const release = (): void => {
    for (const res of held.splice(0)) {
      res.setHeader('content-type', 'application/jwk-set+json')
      res.end(JSON.stringify({ keys: [key.publicJwk] }))
    }
  }
  t.teardown(() => closeServer(jwks))
  const gw = await startGateway({
    routes: (up) => `
  - name: corp
    match: { path: /corp }
    upstream: ${up}
    audience: ${AUDIENCE}
    issuers: [corp]
`,
    extra: `
issuers:
  - id: corp
    issuer: ${ISSUER}
    jwks_uri: ${jwksAt.url}/jwks.json
    algorithms: [ES256]
    jwks: { min_ttl: 60s, max_ttl: 1h, cooldown: 30s, stale: 1h, first_fetch_wait: 10s, timeout: 10s }
`,
  })
  let closed = false
  t.teardown(async () => {
    if (!closed) await gw.close()
  })
  const token = await mint(gw.clock, { key, iss: ISSUER, aud: AUDIENCE })

  // The request waits on the held key fetch; the client gives up meanwhile.
  const serverSawClose = new Promise<void>((resolve) => gw.server.once('connection', (socket) => socket.once('close', () => setImmediate(resolve))))
  const req = httpRequest(`${gw.url}/corp/orders`, { headers: { authorization: `Bearer ${token}` }, agent: false })
  req.on('error', () => {})
  req.end()
  t.ok(await eventually(() => fetches > 0, 2000, 10), 'the gateway is fetching the issuer keys')
  req.destroy()
  // The keys arrive only once the gateway's side of the connection has closed.
  await serverSawClose
  release()

  // The same token from a client that stays is answered, and is the only request the upstream sees.
  const reply = await gw.get('/corp/orders', token)
  t.equal(reply.status, 200)
  t.same(
    gw.upstream.seen.map((s) => s.url),
    ['/corp/orders'],
    'the departed client sent nothing upstream',
  )

  const closing = gw.close().then(() => 'closed')
  closed = true
  const stuck = new Promise((resolve) => setTimeout(resolve, 5000).unref()).then(() => 'still waiting')
  t.equal(await Promise.race([closing, stuck]), 'closed', 'closing the gateway does not wait for the abandoned request')
})
