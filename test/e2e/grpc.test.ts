import t from 'tap'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'
import { resolve } from 'node:path'
import { readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { Agent, fetch as undiciFetch } from 'undici'
import { startBin, tempConfig, type RunningBin } from '../helpers/bin.js'
import { selfSignedCert } from '../helpers/tls.js'
import { basic } from '../helpers/client-auth.js'
import { configYaml, type ConfigTree } from '../helpers/config-tree.js'

/**
 * gRPC through bin/bearward (issue #33): a stock @grpc/grpc-js client, over
 * h2c, calls a grpc-js server behind an `h2c://` route. Unary, server
 * streaming and bidirectional calls are relayed with their metadata and
 * trailers; refusals come back as gRPC statuses (UNAUTHENTICATED,
 * PERMISSION_DENIED) with the Bearer challenge, and reach nothing upstream.
 */

const SECRET = 'demo-secret'
const SECRET_HASH = 'scrypt$16384$8$1$T_fa9RH8qvVUH6zmXvgxwg$5I6XnQ5GNOnSvh4hfIvI-IzxZqino7IpleF2VoTz-9U'

interface Msg {
  text: string
  n: number
}
type Unary = (req: Msg, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res?: Msg) => void) => grpc.ClientUnaryCall
interface EchoClient extends grpc.Client {
  Say: Unary
  Fail: Unary
  Count(req: Msg, md: grpc.Metadata): grpc.ClientReadableStream<Msg>
  Chat(md: grpc.Metadata): grpc.ClientDuplexStream<Msg, Msg>
}
interface AdminClient extends grpc.Client {
  Wipe: Unary
}
type ClientCtor<C> = new (address: string, credentials: grpc.ChannelCredentials) => C
interface EchoPackage {
  bw: { echo: { Echo: ClientCtor<EchoClient> & { service: grpc.ServiceDefinition }; Admin: ClientCtor<AdminClient> & { service: grpc.ServiceDefinition } } }
}

const definition = protoLoader.loadSync(resolve('test/fixtures/grpc/echo.proto'), { keepCase: true, defaults: true })
const pkg = grpc.loadPackageDefinition(definition) as unknown as EchoPackage

/** What the upstream saw of each call: the method and the metadata it arrived with. */
interface SeenCall {
  method: string
  metadata: Record<string, unknown>
}

async function startGrpcUpstream(): Promise<{ port: number; calls: SeenCall[]; close(): Promise<void> }> {
  const calls: SeenCall[] = []
  const server = new grpc.Server()
  const seen = (method: string, md: grpc.Metadata): void => {
    calls.push({ method, metadata: md.getMap() })
  }
  server.addService(pkg.bw.echo.Echo.service, {
    Say(call: grpc.ServerUnaryCall<Msg, Msg>, cb: grpc.sendUnaryData<Msg>) {
      seen('Say', call.metadata)
      const trailer = new grpc.Metadata()
      trailer.set('x-upstream-trailer', 'said')
      cb(null, { text: `hello ${call.request.text}`, n: call.request.n + 1 }, trailer)
    },
    Count(call: grpc.ServerWritableStream<Msg, Msg>) {
      seen('Count', call.metadata)
      for (let i = 1; i <= call.request.n; i++) call.write({ text: call.request.text, n: i })
      call.end()
    },
    Chat(call: grpc.ServerDuplexStream<Msg, Msg>) {
      seen('Chat', call.metadata)
      call.on('data', (m: Msg) => call.write({ text: m.text.toUpperCase(), n: m.n }))
      call.on('end', () => call.end())
    },
    Fail(call: grpc.ServerUnaryCall<Msg, Msg>, cb: grpc.sendUnaryData<Msg>) {
      seen('Fail', call.metadata)
      cb({ code: grpc.status.NOT_FOUND, details: 'no such thing' })
    },
  })
  server.addService(pkg.bw.echo.Admin.service, {
    Wipe(call: grpc.ServerUnaryCall<Msg, Msg>, cb: grpc.sendUnaryData<Msg>) {
      seen('Wipe', call.metadata)
      cb(null, { text: 'wiped', n: 0 })
    },
  })
  const port = await new Promise<number>((res, rej) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? rej(err) : res(p))),
  )
  return { port, calls, close: () => new Promise<void>((res) => server.tryShutdown(() => res())) }
}

function config(upstreamPort: number): ConfigTree {
  const upstream = `h2c://127.0.0.1:${upstreamPort}`
  return {
    listen: '127.0.0.1:0',
    admin_listen: '127.0.0.1:0',
    public_url: 'http://127.0.0.1:8080',
    store: 'memory',
    log: { level: 'info' },
    http2: { cleartext: true },
    authorization_server: {
      scopes: { echo: 'Use the echo service', admin: 'Administer' },
      clients: [{ client_id: 'svc', type: 'confidential', secret_hash: SECRET_HASH, grant_types: ['client_credentials'], scopes: ['echo', 'admin'] }],
    },
    // One route per gRPC service: per-method scopes are path prefixes (/package.Service/Method).
    routes: [
      { name: 'echo', match: { path: '/bw.echo.Echo' }, upstream, scopes: { '*': ['echo'] } },
      { name: 'admin', match: { path: '/bw.echo.Admin/Wipe' }, upstream, scopes: { '*': ['admin'] } },
    ],
  }
}

async function tokenFrom(bin: RunningBin, scope: string, dispatcher?: Agent): Promise<string> {
  const res = await undiciFetch(`${bin.url}/token`, {
    ...(dispatcher === undefined ? {} : { dispatcher }),
    method: 'POST',
    headers: { authorization: basic('svc', SECRET), 'content-type': 'application/x-www-form-urlencoded' },
    body: `grant_type=client_credentials&scope=${encodeURIComponent(scope)}`,
  })
  if (res.status !== 200) throw new Error(`token: ${res.status}`)
  return ((await res.json()) as { access_token: string }).access_token
}

function bearer(token: string | null): grpc.Metadata {
  const md = new grpc.Metadata()
  if (token !== null) md.set('authorization', `Bearer ${token}`)
  return md
}

/** A unary call's outcome: its answer or its error, with the headers and trailers the client got. */
function unary(
  call: Unary,
  client: grpc.Client,
  req: Msg,
  md: grpc.Metadata,
): Promise<{ err: grpc.ServiceError | null; res: Msg | undefined; headers: grpc.Metadata | null; trailers: grpc.Metadata | null }> {
  return new Promise((done) => {
    let headers: grpc.Metadata | null = null
    let trailers: grpc.Metadata | null = null
    let outcome: { err: grpc.ServiceError | null; res: Msg | undefined } | null = null
    let status = false
    const finish = (): void => {
      if (outcome !== null && status) done({ ...outcome, headers, trailers })
    }
    const c = call.call(client, req, md, (err, res) => {
      outcome = { err, res }
      finish()
    })
    c.on('metadata', (m: grpc.Metadata) => (headers = m))
    c.on('status', (s: grpc.StatusObject) => {
      trailers = s.metadata
      status = true
      finish()
    })
  })
}

t.test('gRPC through bearward over h2c', async (t) => {
  const up = await startGrpcUpstream()
  const cfg = await tempConfig(config(up.port))
  const bin = await startBin(cfg.file)
  const address = new URL(bin.url).host
  const echo = new pkg.bw.echo.Echo(address, grpc.credentials.createInsecure())
  const admin = new pkg.bw.echo.Admin(address, grpc.credentials.createInsecure())
  t.teardown(async () => {
    echo.close()
    admin.close()
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const echoToken = await tokenFrom(bin, 'echo')

  await t.test('unary with a valid token: answer, headers and trailers relayed', async (t) => {
    const out = await unary(echo.Say, echo, { text: 'grpc', n: 1 }, bearer(echoToken))
    t.equal(out.err, null)
    t.same(out.res, { text: 'hello grpc', n: 2 })
    t.same(out.trailers?.get('x-upstream-trailer'), ['said'], "the upstream's trailer reaches the client")
    t.match(String(out.headers?.get('x-request-id')[0]), /^[0-9a-f]{12}-[0-9a-z]+$/, "bearward's request id")
    const call = up.calls.at(-1)
    t.equal(call?.method, 'Say')
    t.equal(call?.metadata.authorization, undefined, 'the token is not passed on')
  })

  await t.test("an upstream's own failure arrives as its status", async (t) => {
    const out = await unary(echo.Fail, echo, { text: 'x', n: 0 }, bearer(echoToken))
    t.equal(out.err?.code, grpc.status.NOT_FOUND)
    t.equal(out.err?.details, 'no such thing')
  })

  await t.test('server streaming', async (t) => {
    const got: Msg[] = []
    const stream = echo.Count({ text: 'tick', n: 5 }, bearer(echoToken))
    stream.on('data', (m: Msg) => got.push(m))
    const status = await new Promise<grpc.StatusObject>((res) => stream.on('status', res))
    t.equal(status.code, grpc.status.OK)
    t.same(
      got.map((m) => m.n),
      [1, 2, 3, 4, 5],
    )
  })

  await t.test('bidirectional streaming: each answer arrives before the client ends its side', async (t) => {
    const chat = echo.Chat(bearer(echoToken))
    const next = (): Promise<Msg> => new Promise((res) => chat.once('data', res))
    for (const [i, word] of ['one', 'two', 'three'].entries()) {
      const answer = next()
      chat.write({ text: word, n: i })
      t.same(await answer, { text: word.toUpperCase(), n: i }, `${word} echoed while the stream is open`)
    }
    chat.end()
    const status = await new Promise<grpc.StatusObject>((res) => chat.on('status', res))
    t.equal(status.code, grpc.status.OK)
  })

  await t.test('without a token: UNAUTHENTICATED with the Bearer challenge, nothing upstream', async (t) => {
    const before = up.calls.length
    const out = await unary(echo.Say, echo, { text: 'x', n: 0 }, bearer(null))
    t.equal(out.err?.code, grpc.status.UNAUTHENTICATED)
    t.match(out.err?.details, /token/i)
    t.match(String(out.trailers?.get('www-authenticate')[0]), /^Bearer realm="[^"]+", scope="echo"/)
    t.equal(up.calls.length, before)
  })

  await t.test('a bad token: UNAUTHENTICATED naming the error', async (t) => {
    const forged = `${echoToken.slice(0, echoToken.lastIndexOf('.'))}.${'A'.repeat(86)}`
    const out = await unary(echo.Say, echo, { text: 'x', n: 0 }, bearer(forged))
    t.equal(out.err?.code, grpc.status.UNAUTHENTICATED)
    t.match(out.err?.details, /^invalid_token/)
    t.match(String(out.trailers?.get('www-authenticate')[0]), /error="invalid_token"/)
    // RFC 6750 3.1: a malformed token is invalid_request (400); still UNAUTHENTICATED to a gRPC client.
    const malformed = await unary(echo.Say, echo, { text: 'x', n: 0 }, bearer('not-a-token'))
    t.equal(malformed.err?.code, grpc.status.UNAUTHENTICATED)
    t.match(malformed.err?.details, /^invalid_request/)
  })

  await t.test('too few scopes: PERMISSION_DENIED on the other service, nothing upstream', async (t) => {
    const before = up.calls.length
    const out = await unary(admin.Wipe, admin, { text: 'x', n: 0 }, bearer(echoToken))
    t.equal(out.err?.code, grpc.status.PERMISSION_DENIED)
    t.match(out.err?.details, /^insufficient_scope/)
    t.match(String(out.trailers?.get('www-authenticate')[0]), /error="insufficient_scope"/)
    t.equal(up.calls.length, before)
    const adminToken = await tokenFrom(bin, 'admin')
    const ok = await unary(admin.Wipe, admin, { text: 'x', n: 0 }, bearer(adminToken))
    t.same(ok.res, { text: 'wiped', n: 0 }, 'with the scope it goes through')
  })

  await t.test('a streaming call is refused the same way', async (t) => {
    const stream = echo.Count({ text: 'x', n: 3 }, bearer(null))
    stream.on('data', () => t.fail('no message'))
    const err = await new Promise<grpc.ServiceError>((res) => stream.on('error', res))
    t.equal(err.code, grpc.status.UNAUTHENTICATED)
  })
})

t.test('gRPC through bearward over TLS (ALPN h2)', async (t) => {
  const up = await startGrpcUpstream()
  const cfg = await tempConfig('')
  const cert = selfSignedCert(cfg.dir, 'listen')
  await writeFile(
    cfg.file,
    configYaml({
      ...config(up.port),
      public_url: 'https://127.0.0.1:8080',
      tls: { cert_file: cert.certFile, key_file: cert.keyFile },
      http2: { tls: true },
    }),
  )
  const bin = await startBin(cfg.file)
  const credentials = grpc.credentials.createSsl(readFileSync(cert.certFile))
  const echo = new pkg.bw.echo.Echo(new URL(bin.url).host, credentials)
  const dispatcher = new Agent({ connect: { ca: cert.cert, servername: 'localhost' } })
  t.teardown(async () => {
    echo.close()
    await dispatcher.close()
    await bin.stop()
    await up.close()
    await cfg.cleanup()
  })
  const token = await tokenFrom(bin, 'echo', dispatcher)
  const ok = await unary(echo.Say, echo, { text: 'tls', n: 1 }, bearer(token))
  t.equal(ok.err, null)
  t.same(ok.res, { text: 'hello tls', n: 2 })
  const refused = await unary(echo.Say, echo, { text: 'x', n: 0 }, bearer(null))
  t.equal(refused.err?.code, grpc.status.UNAUTHENTICATED)
})
