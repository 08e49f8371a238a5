import t from 'tap'
import { randomBytes } from 'node:crypto'
import { responseHeaderName, responseHeaderValue } from '../../src/gateway/header-text.js'

const bytes = (text: string): Buffer => Buffer.from(text, 'latin1')

t.test('names keep their case; each case variant is its own entry', async (t) => {
  for (let round = 0; round < 3; round++) {
    const upper = responseHeaderName(bytes('Content-Type'))
    const lower = responseHeaderName(bytes('content-type'))
    t.equal(upper.text, 'Content-Type')
    t.equal(lower.text, 'content-type')
    t.equal(upper.lower, 'content-type')
    t.equal(upper.cacheValue, true)
  }
  t.equal(responseHeaderName(bytes('Set-Cookie')).cacheValue, false, 'a cookie value is never remembered')
  t.equal(responseHeaderName(bytes('WWW-Authenticate')).cacheValue, false)
  t.same(responseHeaderName('X-String'), { text: 'X-String', lower: 'x-string', cacheValue: false }, 'string names (trailers) pass through')
})

t.test('every value decodes to exactly its bytes, first time and on repeats, whatever shares a slot', async (t) => {
  const contentType = responseHeaderName(bytes('Content-Type'))
  const cookie = responseHeaderName(bytes('Set-Cookie'))
  // 4,000 distinct short values over 512 slots: many collide and replace each other.
  const samples = Array.from({ length: 4000 }, (_, i) => randomBytes(1 + (i % 80)))
  let wrong = 0
  for (let pass = 0; pass < 2; pass++) {
    for (const sample of samples) {
      for (const name of [contentType, cookie]) {
        const text = responseHeaderValue(name, sample)
        if (!Buffer.from(text, 'latin1').equals(sample)) wrong++
      }
    }
  }
  t.equal(wrong, 0, 'no value ever came back as another one')
  t.equal(responseHeaderValue(contentType, 'already text'), 'already text')
})

t.test('a remembered entry does not alias the buffer it was read from', async (t) => {
  // undici hands out views into its socket read buffer and reuses that memory:
  // one buffer, rewritten in place with a new value of the same length each time.
  const shared = Buffer.alloc('text/html; charset=windows-0000'.length)
  const name = responseHeaderName(bytes('Content-Type'))
  let wrong = 0
  for (let i = 0; i < 2000; i++) {
    const value = `text/html; charset=windows-${String(i).padStart(4, '0')}`
    shared.write(value, 'latin1')
    if (responseHeaderValue(name, shared) !== value) wrong++
  }
  t.equal(wrong, 0, 'each rewrite is decoded as its new bytes, never as text remembered for the old ones')
})

t.test('long names and values are decoded exactly', async (t) => {
  const longName = 'X-' + 'a'.repeat(200)
  t.equal(responseHeaderName(bytes(longName)).text, longName)
  const longValue = 'max-age=' + '9'.repeat(300)
  const cacheControl = responseHeaderName(bytes('Cache-Control'))
  t.equal(responseHeaderValue(cacheControl, bytes(longValue)), longValue)
  t.equal(responseHeaderValue(cacheControl, bytes(longValue)), longValue)
})
