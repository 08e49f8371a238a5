/** Stranger's text made visible (src/as/views/visible-text.ts): what the approval and consent pages show. */
import t from 'tap'
import { visibleJson, visibleText } from '../../../src/as/views/visible-text.js'

t.test('a raw string: every control, bidi, zero-width and separator character as its escape, line breaks too', async (t) => {
  t.equal(visibleText('pay 5\u202E00 EUR'), 'pay 5\\u202e00 EUR')
  t.equal(visibleText('ok\nApprove\u2028\u200B\u0000'), 'ok\\u000aApprove\\u2028\\u200b\\u0000')
  t.equal(visibleText('Grüße, 東京 😀'), 'Grüße, 東京 😀', 'printable text of any script stays itself')
})

t.test('JSON text: the indentation keeps its line breaks, a value’s hidden characters are escaped', async (t) => {
  const text = JSON.stringify({ to: 'Merchant \u202egnp.exe', note: 'a\nb' }, null, 2)
  t.equal(visibleJson(text), '{\n  "to": "Merchant \\u202egnp.exe",\n  "note": "a\\nb"\n}')
  t.same(JSON.parse(visibleJson(text)), JSON.parse(text), 'still the same JSON')
})
