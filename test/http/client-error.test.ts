/**
 * What the 'clientError' answer says for each parser error Node 20 reports
 * (the e2e cases are in test/security/hostile-clients.test.ts).
 */
import t from 'tap'
import { clientErrorAnswer, type ParserError } from '../../src/http/client-error.js'

function parserError(code: string, packet?: string, bytesParsed?: number): ParserError {
  const err: ParserError = new Error(code)
  err.code = code
  if (packet !== undefined) err.rawPacket = Buffer.from(packet, 'latin1')
  if (bytesParsed !== undefined) err.bytesParsed = bytesParsed
  return err
}

t.test('header overflow: 414 while the request line is unfinished, else 431', async (t) => {
  const longLine = `GET /${'a'.repeat(200)} HTTP/1.1\r\nHost: x\r\n`
  t.equal(clientErrorAnswer(parserError('HPE_HEADER_OVERFLOW', longLine, 150)).status, 414, 'overflow inside the request target')
  t.equal(clientErrorAnswer(parserError('HPE_HEADER_OVERFLOW', `GET /${'a'.repeat(200)}`, 150)).status, 414, 'no line end yet')
  const bigHeader = `GET / HTTP/1.1\r\nX-Big: ${'a'.repeat(200)}`
  t.equal(clientErrorAnswer(parserError('HPE_HEADER_OVERFLOW', bigHeader, 150)).status, 431, 'overflow in a header')
  t.equal(clientErrorAnswer(parserError('HPE_HEADER_OVERFLOW', 'a'.repeat(300), 150)).status, 431, 'a later chunk of a header value')
  t.equal(clientErrorAnswer(parserError('HPE_HEADER_OVERFLOW')).status, 431, 'no packet')
  const answer = clientErrorAnswer(parserError('HPE_HEADER_OVERFLOW', bigHeader, 150))
  t.equal(answer.error, 'request_header_fields_too_large')
  t.equal(answer.headers.connection, 'close')
})

t.test('timeouts are 408, anything else 400', async (t) => {
  t.equal(clientErrorAnswer(parserError('ERR_HTTP_REQUEST_TIMEOUT')).status, 408)
  t.equal(clientErrorAnswer(parserError('HPE_HEADERS_TIMEOUT')).status, 408)
  for (const code of ['HPE_INVALID_HEADER_TOKEN', 'HPE_INVALID_METHOD', 'HPE_UNEXPECTED_CONTENT_LENGTH', 'ECONNRESET']) {
    const answer = clientErrorAnswer(parserError(code))
    t.equal(answer.status, 400, code)
    t.equal(answer.error, 'invalid_request')
  }
})
