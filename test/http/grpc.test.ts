import t from 'tap'
import type { IncomingMessage } from 'node:http'
import { InsufficientScope, InvalidRequest, MissingToken, ServerError } from '../../src/errors.js'
import { grpcMessage, grpcRefusalHeaders, grpcStatusOf, isGrpcRequest } from '../../src/http/grpc.js'
import { prefaceVerdict, H2_PREFACE } from '../../src/server/http2.js'

const withType = (type: string | undefined): IncomingMessage => ({ headers: type === undefined ? {} : { 'content-type': type } }) as IncomingMessage

t.test('what counts as a gRPC request', async (t) => {
  for (const type of ['application/grpc', 'application/grpc+proto', 'application/grpc+json', 'Application/GRPC', 'application/grpc;charset=utf-8']) {
    t.ok(isGrpcRequest(withType(type)), type)
  }
  // gRPC-Web has its own framing (its trailers travel in the body): its refusals stay HTTP ones.
  for (const type of [undefined, '', 'application/json', 'application/grpc-web', 'application/grpc-web+proto', 'application/grpcx', 'text/application/grpc']) {
    t.notOk(isGrpcRequest(withType(type)), String(type))
  }
  t.notOk(isGrpcRequest(undefined))
})

t.test('HTTP statuses map to gRPC statuses', async (t) => {
  t.equal(grpcStatusOf(401), 16, '401 UNAUTHENTICATED')
  t.equal(grpcStatusOf(403), 7, '403 PERMISSION_DENIED')
  t.equal(grpcStatusOf(400), 3, 'a plain 400 is the caller’s fault: INVALID_ARGUMENT')
  t.equal(grpcStatusOf(400, true), 16, 'a 400 about the credentials: UNAUTHENTICATED')
  t.equal(grpcStatusOf(404), 12)
  t.equal(grpcStatusOf(413), 8)
  t.equal(grpcStatusOf(503), 14)
  t.equal(grpcStatusOf(502), 14)
  t.equal(grpcStatusOf(504), 4)
  t.equal(grpcStatusOf(500), 2)
})

t.test('grpc-message is percent-encoded: nothing can break out of the field', async (t) => {
  t.equal(grpcMessage('plain text'), 'plain text')
  t.equal(grpcMessage('100%\r\nx-injected: 1'), '100%25%0D%0Ax-injected: 1')
  t.equal(grpcMessage('café'), 'caf%C3%A9')
})

t.test('a refusal’s Trailers-Only fields', async (t) => {
  const challenge = { 'www-authenticate': 'Bearer realm="r"', 'cache-control': 'no-store', connection: 'close', 'content-length': '10' }
  const missing = grpcRefusalHeaders(new MissingToken(), challenge, 'id-1')
  t.same(missing, {
    'www-authenticate': 'Bearer realm="r"',
    'cache-control': 'no-store',
    'content-type': 'application/grpc',
    'grpc-status': '16',
    'grpc-message': 'A bearer access token is required',
    'x-request-id': 'id-1',
  })
  const scope = grpcRefusalHeaders(new InsufficientScope(['admin']), challenge, 'id-2')
  t.equal(scope['grpc-status'], '7')
  t.match(scope['grpc-message'], /^insufficient_scope: /)
  t.equal(grpcRefusalHeaders(new InvalidRequest('bad'), {}, 'id-3')['grpc-status'], '3')
  t.equal(grpcRefusalHeaders(new ServerError(), {}, 'id-4')['grpc-status'], '2')
})

t.test('the h2c preface is told from an HTTP/1.1 request line by its first bytes', async (t) => {
  t.equal(prefaceVerdict(H2_PREFACE), 'h2')
  t.equal(prefaceVerdict(Buffer.concat([H2_PREFACE, Buffer.from([0, 0, 0, 4])])), 'h2')
  t.equal(prefaceVerdict(H2_PREFACE.subarray(0, 5)), null, 'too few bytes to tell')
  t.equal(prefaceVerdict(Buffer.from('P')), null)
  t.equal(prefaceVerdict(Buffer.from('GET / HTTP/1.1\r\n')), 'http/1.1')
  t.equal(prefaceVerdict(Buffer.from('POST / HTTP/1.1\r\n')), 'http/1.1', 'POST shares only its first letter')
  t.equal(prefaceVerdict(Buffer.from('PRI * HTTP/1.1\r\n')), 'http/1.1')
})
