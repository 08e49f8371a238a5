/**
 * Client ID Metadata Documents: the fetch a stranger's client_id causes, and
 * every SSRF refusal (non-https, private and loopback addresses, by literal
 * and by resolved name, redirects, size, time, untrusted certificates), each
 * checked to have sent nothing where it must not; the document's own rules
 * (client_id equals the URL, metadata like registration); HTTP caching.
 * A real https server on 127.0.0.1 with a test CA.
 */
import t from 'tap'
import { createServer } from 'node:https'
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { mkdtemp, rm } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ManualClock } from '../../src/clock.js'
import { networkInterfaces } from 'node:os'
import type { Socket } from 'node:net'
import { documentUrlProblem, MetadataDocuments } from '../../src/as/client-id-metadata-document.js'
import { authorizeUrl, authParams, frontYaml, get, startFront } from '../helpers/as-front.js'
import { selfSignedCert } from '../helpers/tls.js'
import { closeServer, listen } from '../helpers/http.js'

type Handler = (req: IncomingMessage, res: ServerResponse, base: string) => void

async function startDocServer(
  dir: string,
): Promise<{ base: string; port: number; hits: string[]; handle: (h: Handler) => void; ca: string; close(): Promise<void> }> {
  const cert = selfSignedCert(dir, 'docs')
  const hits: string[] = []
  let handler: Handler = (_req, res) => res.end('{}')
  let base = ''
  const server = createServer({ cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) }, (req, res) => {
    hits.push(req.url ?? '')
    handler(req, res, base)
  })
  const { port } = await listen(server)
  base = `https://localhost:${port}`
  return {
    base,
    port,
    hits,
    handle: (h) => {
      handler = h
    },
    ca: cert.certFile,
    close: () => closeServer(server),
  }
}

function doc(url: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    client_id: url,
    client_name: 'Doc Client',
    redirect_uris: ['http://127.0.0.1:7777/cb'],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    ...extra,
  })
}

t.test('URL rules (the address rules: test/http/public-address.test.ts)', async (t) => {
  t.equal(documentUrlProblem('http://client.example.com/c.json'), 'not https')
  t.equal(documentUrlProblem('https://client.example.com/'), 'no path')
  t.equal(documentUrlProblem('https://u:p@client.example.com/c.json'), 'credentials or fragment')
  t.equal(documentUrlProblem('https://client.example.com/c.json#x'), 'credentials or fragment')
  t.equal(documentUrlProblem('https://client.example.com/c.json'), undefined)
})

t.test('metadata documents', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'bw-cimd-'))
  const srv = await startDocServer(dir)
  t.teardown(async () => {
    await srv.close()
    await rm(dir, { recursive: true, force: true })
  })
  const clock = new ManualClock()
  const make = (over: { allowHosts?: string[]; caFile?: string | null; timeoutMs?: number } = {}): MetadataDocuments => {
    const docs = new MetadataDocuments(
      { allowHosts: over.allowHosts ?? ['localhost'], caFile: over.caFile === undefined ? srv.ca : over.caFile, scopes: ['mcp:tools'] },
      clock,
      { timeoutMs: over.timeoutMs ?? 5000 },
    )
    t.teardown(() => docs.close())
    return docs
  }

  t.test('an allowed host with a good document: a public client that always sees consent', async (t) => {
    const docs = make()
    const url = `${srv.base}/good.json`
    srv.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=60' })
      res.end(doc(url, { scope: 'mcp:tools' }))
    })
    const client = await docs.find(url)
    t.match(client, {
      clientId: url,
      name: 'Doc Client',
      type: 'public',
      tokenEndpointAuthMethod: 'none',
      redirectUris: ['http://127.0.0.1:7777/cb'],
      scopes: ['mcp:tools'],
      requirePkce: true,
      selfRegistered: 'metadata_document',
    })
  })

  t.test('HTTP caching: max-age is honoured; no-store is not cached', async (t) => {
    const docs = make()
    const url = `${srv.base}/cached.json`
    let cacheControl = 'max-age=60'
    srv.handle((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'cache-control': cacheControl })
      res.end(doc(url))
    })
    const count = (): number => srv.hits.filter((h) => h === '/cached.json').length
    await docs.find(url)
    await docs.find(url)
    t.equal(count(), 1, 'the second lookup is served from the cache')
    clock.advance(61_000)
    cacheControl = 'no-store'
    await docs.find(url)
    t.equal(count(), 2, 'refetched after max-age')
    await docs.find(url)
    t.equal(count(), 3, 'no-store: fetched every time')
  })

  t.test('the document must name its own URL and pass the registration rules', async (t) => {
    const docs = make()
    const cases: Array<[string, string]> = [
      ['/other-id.json', doc(`${srv.base}/somewhere-else.json`)],
      ['/bad-redirect.json', ''],
      ['/secret.json', ''],
      ['/scope.json', ''],
      ['/not-json.json', '{"client_id":'],
    ]
    srv.handle((req, res, base) => {
      const url = `${base}${req.url ?? ''}`
      const body =
        req.url === '/bad-redirect.json'
          ? doc(url, { redirect_uris: ['http://evil.example.com/cb'] })
          : req.url === '/secret.json'
            ? doc(url, { token_endpoint_auth_method: 'client_secret_basic' })
            : req.url === '/scope.json'
              ? doc(url, { scope: 'admin' })
              : (cases.find(([p]) => p === req.url)?.[1] ?? '{}')
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(body)
    })
    for (const [path] of cases) t.equal(await docs.find(`${srv.base}${path}`), undefined, path)
  })

  t.test('SSRF: refusals, and what reached the server', async (t) => {
    srv.handle((req, res, base) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(doc(`${base}${req.url ?? ''}`))
    })
    const strict = make({ allowHosts: [] })
    const before = srv.hits.length
    t.equal(await strict.find(`https://127.0.0.1:${srv.port}/literal.json`), undefined, 'a loopback IP literal')
    t.equal(await strict.find(`https://[::1]:${srv.port}/literal6.json`), undefined, 'an IPv6 loopback literal')
    t.equal(await strict.find(`${srv.base}/resolved.json`), undefined, 'a name that resolves to loopback: the resolved address is checked')
    t.equal(await strict.find(`https://169.254.169.254/latest/meta-data.json`), undefined, 'the cloud metadata address')
    t.equal(await strict.find(`https://[::ffff:7f00:1]:${srv.port}/mapped.json`), undefined, 'IPv4-mapped loopback, in hex')
    t.equal(await strict.find(`https://[2002:7f00:1::1]:${srv.port}/6to4.json`), undefined, '6to4 embedding loopback')
    t.equal(await strict.find(`https://[64:ff9b::7f00:1]:${srv.port}/nat64.json`), undefined, 'NAT64 embedding loopback')
    t.equal(await strict.find(`https://0x7f.1:${srv.port}/hex.json`), undefined, 'a hex IPv4 spelling (the URL parser reads it as 127.0.0.1)')
    t.equal(srv.hits.length, before, 'none of them reached the server')
    const plain = make()
    t.equal(await plain.find(`http://localhost:${srv.port}/plain.json`), undefined, 'http is refused even for an allowed host')
    t.equal(srv.hits.length, before, 'nothing sent')
  })

  t.test('SSRF: no redirect is followed', async (t) => {
    const docs = make()
    const target = createHttpServer((_req, res) => res.end('{}'))
    const targetHits: string[] = []
    target.on('request', (req: IncomingMessage) => targetHits.push(req.url ?? ''))
    const targetAt = await listen(target)
    t.teardown(() => new Promise<void>((resolve) => target.close(() => resolve())))
    srv.handle((_req, res) => {
      res.writeHead(302, { location: `${targetAt.url}/internal` })
      res.end()
    })
    t.equal(await docs.find(`${srv.base}/redirect.json`), undefined)
    t.same(targetHits, [], 'the redirect target saw nothing')
  })

  t.test('SSRF: size and time are capped', async (t) => {
    const docs = make({ timeoutMs: 300 })
    srv.handle((req, res, base) => {
      if (req.url === '/big.json') {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(doc(`${base}/big.json`, { client_name: 'x'.repeat(100), contacts: Array.from({ length: 10 }, () => 'y'.repeat(600)) }))
        return
      }
      if (req.url === '/chunked-big.json') {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.write('{"client_id":"')
        res.end('z'.repeat(6000))
        return
      }
      // /slow.json: never answers
    })
    t.equal(await docs.find(`${srv.base}/big.json`), undefined, 'over 5 KB by Content-Length')
    t.equal(await docs.find(`${srv.base}/chunked-big.json`), undefined, 'over 5 KB while reading')
    const started = Date.now()
    t.equal(await docs.find(`${srv.base}/slow.json`), undefined, 'no answer in time')
    const took = Date.now() - started
    t.ok(took < 3000, `gave up after ${took} ms (limit 300 ms)`)
  })

  t.test('the certificate must be trusted: without ca_file the test CA is not', async (t) => {
    srv.handle((req, res, base) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(doc(`${base}${req.url ?? ''}`))
    })
    const noCa = make({ caFile: null })
    t.equal(await noCa.find(`${srv.base}/untrusted.json`), undefined)
  })
})

/** This host's first address that is not loopback (IPv4 first), as a URL host. */
function ownInterfaceHost(): string | undefined {
  const all = Object.values(networkInterfaces()).flatMap((list) => list ?? [])
  const external = all.filter((i) => !i.internal && !(i.family === 'IPv6' && i.address.toLowerCase().startsWith('fe80')))
  const pick = external.find((i) => i.family === 'IPv4') ?? external[0]
  if (pick === undefined) return undefined
  return pick.family === 'IPv6' ? `[${pick.address}]` : pick.address
}

t.test("end to end: a document URL naming this host's own interface address is refused, nothing reaches it", async (t) => {
  const host = ownInterfaceHost()
  t.ok(host, 'this machine has a non-loopback interface address (the test needs one)')
  if (host === undefined) return
  // A service on every address of this host, as the one the issue reached.
  const sockets = new Set<Socket>()
  const service = createHttpServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end('{}')
  })
  service.on('connection', (socket: Socket) => sockets.add(socket))
  const { port } = await listen(service, '0.0.0.0')
  t.teardown(() => new Promise<void>((resolve) => service.close(() => resolve())))

  const front = await startFront(await frontYaml({ asExtra: '  client_id_metadata_documents: { enabled: true }' }))
  t.teardown(() => front.close())
  const clientId = `https://${host}:${port}/client.json`
  const res = await get(authorizeUrl(front, authParams({ client_id: clientId, redirect_uri: 'http://127.0.0.1:7777/cb', scope: 'orders:read' })))
  t.equal(res.status, 400, 'the client is unknown: a page, no redirect')
  t.match(res.text, /not registered with this server/)
  t.equal(res.headers.get('location'), null)
  t.equal(sockets.size, 0, `the service on ${host}:${port} saw no connection`)
})
