/**
 * Property (issue #28.1): whatever JSON-RPC shapes, key orders, duplicate
 * keys, escapes, batches and content types a body is made of, a call of a
 * tool whose scopes the token lacks never reaches the upstream, under any
 * reading a server behind could give it (last or first of duplicate keys,
 * a method in another case, a call without id, a name inside __proto__, a
 * name trimmed, stripped of invisible characters, NFKC-normalised or
 * lower-cased).
 * Seeded and bounded by a fixed number of runs (300, about a second on an
 * idle machine; never cut short by a clock, so a loaded machine runs the same
 * cases, only slower); a failure
 * prints the seed and the shrunk body.
 */
import fc from 'fast-check'
import t from 'tap'
import { startGateway } from './fixture.js'

const FORBIDDEN = 'delete_order'

/** One member as written: the key's text (maybe escaped) and the value's JSON text. */
type Member = readonly [string, string]

/** A key written plainly or with one of its letters as a \u escape (same name to JSON). */
const keyText = (key: string): fc.Arbitrary<string> =>
  fc.nat({ max: key.length }).map((i) => {
    if (i === key.length || key.length === 0) return JSON.stringify(key)
    const c = key.charCodeAt(i)
    return `"${key.slice(0, i)}\\u${c.toString(16).padStart(4, '0')}${key.slice(i + 1)}"`
  })

/** An object from members, in a shuffled order. */
const objectText = (members: ReadonlyArray<fc.Arbitrary<Member>>): fc.Arbitrary<string> =>
  fc
    .tuple(...members)
    .chain((ms) => fc.shuffledSubarray(ms, { minLength: ms.length, maxLength: ms.length }))
    .map((ms) => `{${ms.map(([k, v]) => `${k}:${v}`).join(',')}}`)

const member = (key: string, value: fc.Arbitrary<string>): fc.Arbitrary<Member> => fc.tuple(keyText(key), value)

const METHODS = ['tools/call', 'Tools/Call', 'TOOLS/CALL', 'tools/call ', 'tools/list', 'notifications/initialized', 'prompts/get']
const NAMES = [FORBIDDEN, 'get_order', 'delete_orde', 'DELETE_ORDER', ' delete_order', 'delete_order\u200b', 'ｄｅｌｅｔｅ_ｏｒｄｅｒ', 'delete_order\u0000']

/** The name a lenient server may take `name` for: NFKC, controls and invisible characters dropped, trimmed, lower-cased. */
function lenientRead(name: string): string {
  return name
    .normalize('NFKC')
    .replace(/[\p{Cc}\p{Cf}]/gu, '')
    .trim()
    .toLowerCase()
}
const IDS = ['1', '"a"', 'null', '1.5', '{}', '-0']

/** A generated message: its text, and whether some reading of it calls the forbidden tool. */
interface Generated {
  readonly text: string
  readonly forbidden: boolean
}

/** params: one or two `name` members (a duplicate), maybe hidden in __proto__. */
const params: fc.Arbitrary<{ text: string; names: string[] }> = fc
  .tuple(fc.subarray(NAMES, { minLength: 1, maxLength: 2 }), fc.boolean(), fc.boolean())
  .chain(([names, proto, extra]) => {
    const members = names.map((n) => member('name', fc.constant(JSON.stringify(n))))
    if (extra) members.push(member('arguments', fc.constant('{"id":7}')))
    return objectText(members).map((inner) => ({ text: proto ? `{"__proto__":${inner}}` : inner, names }))
  })

const request: fc.Arbitrary<Generated> = fc
  .tuple(fc.subarray(METHODS, { minLength: 1, maxLength: 2 }), params, fc.option(fc.constantFrom(...IDS), { nil: undefined }), fc.boolean())
  .chain(([methods, p, id, jsonrpc]) => {
    const members = [
      ...methods.map((m) => member('method', fc.constant(JSON.stringify(m)))),
      member('params', fc.constant(p.text)),
      ...(jsonrpc ? [member('jsonrpc', fc.constant('"2.0"'))] : []),
      ...(id === undefined ? [] : [member('id', fc.constant(id))]),
    ]
    const forbidden = methods.some((m) => m.trim().toLowerCase() === 'tools/call') && p.names.some((n) => lenientRead(n) === FORBIDDEN)
    return objectText(members).map((text) => ({ text, forbidden }))
  })

const response: fc.Arbitrary<Generated> = fc
  .tuple(fc.constantFrom('{}', `{"content":[{"type":"text","text":"${FORBIDDEN}"}]}`), fc.boolean(), fc.constantFrom(...IDS))
  .chain(([result, isError, id]) =>
    objectText([
      member('jsonrpc', fc.constant('"2.0"')),
      member('id', fc.constant(id)),
      isError ? member('error', fc.constant('{"code":-1,"message":"x"}')) : member('result', fc.constant(result)),
    ]).map((text) => ({ text, forbidden: false })),
  )

const junk: fc.Arbitrary<Generated> = fc.constantFrom('1', 'null', '"x"', '[]', '{}', 'true').map((text) => ({ text, forbidden: false }))

const message = fc.oneof({ weight: 4, arbitrary: request }, { weight: 2, arbitrary: response }, { weight: 1, arbitrary: junk })

const body: fc.Arbitrary<Generated> = fc.oneof(
  message,
  fc.array(message, { minLength: 0, maxLength: 4 }).map((ms) => ({ text: `[${ms.map((m) => m.text).join(',')}]`, forbidden: ms.some((m) => m.forbidden) })),
)

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/vnd.api+json',
  undefined,
]
const VERSIONS = [undefined, '2025-03-26', '2025-06-18', '2026-07-28']

t.test('a tool whose scopes the token lacks never reaches the upstream', async (t) => {
  const gw = await startGateway({
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: { tools: { ${FORBIDDEN}: ["orders:write"] } }
`,
  })
  t.teardown(() => gw.close())
  const token = await gw.mint({ scope: 'mcp:tools' })
  let reached = 0
  let forbiddenTried = 0
  await fc.assert(
    fc.asyncProperty(body, fc.constantFrom(...CONTENT_TYPES), fc.constantFrom(...VERSIONS), async (b, type, version) => {
      const before = gw.upstream.seen.length
      const headers: Record<string, string> = { authorization: `Bearer ${token}` }
      if (type !== undefined) headers['content-type'] = type
      if (version !== undefined) headers['mcp-protocol-version'] = version
      const res = await gw.send('/mcp', { method: 'POST', headers, body: b.text })
      const forwarded = gw.upstream.seen.length > before
      if (forwarded) reached++
      if (b.forbidden) forbiddenTried++
      if (b.forbidden && forwarded) throw new Error(`forwarded (${res.status}): ${b.text}`)
      if (forwarded && gw.upstream.seen.at(-1)?.body !== b.text) throw new Error('the body was changed on its way')
      if (!forwarded && res.status === 200) throw new Error('a 200 that did not come from the upstream')
    }),
    { seed: 2807, numRuns: 300 },
  )
  // The generator must exercise both sides, or the property proves nothing.
  t.ok(forbiddenTried > 30, `forbidden calls were tried (${forbiddenTried})`)
  t.ok(reached > 10, `some bodies were forwarded (${reached})`)
})

/** `%XX` of an unreserved character decoded (RFC 3986 6.2.2.2), in either hex case. */
function decodeUnreserved(uri: string): string {
  return uri.replace(/%([0-9A-Fa-f]{2})/g, (m, hex: string) => {
    const c = String.fromCharCode(Number.parseInt(hex, 16))
    return /[A-Za-z0-9\-._~]/.test(c) ? c : m
  })
}

/**
 * Whether a server may read `uri` as `orders://secret`: the SDKs' lookup
 * (`new URL(uri).toString()`), or an RFC 3986 reading (unreserved decoded,
 * host case folded) whose scheme, host and path are the protected one's.
 */
function readsAsSecret(uri: string): boolean {
  try {
    if (new URL(uri).href === 'orders://secret') return true
    const url = new URL(decodeUnreserved(uri))
    return url.protocol === 'orders:' && url.hostname.toLowerCase().replace(/\.$/, '') === 'secret' && url.pathname === ''
  } catch {
    return false
  }
}

const C0_OR_SPACE = [' ', '\t', '\n', '\r', '\u0000', '\u001f']

/** `plain` most of the time, else one of `others`: so that some URIs are canonical and reach the server. */
const mostly = (plain: string, ...others: string[]): fc.Arbitrary<string> =>
  fc.oneof({ weight: 6, arbitrary: fc.constant(plain) }, { weight: 1, arbitrary: fc.constantFrom(...others) })

/** A letter in either case, or percent-encoded with upper or lower hex. */
const spelt = (c: string): fc.Arbitrary<string> => {
  const hex = c.charCodeAt(0).toString(16)
  return mostly(c, c.toUpperCase(), `%${hex}`, `%${hex.toUpperCase()}`)
}

/** `orders://secret` (or a neighbour) spelt every way these choices allow, plus inserted tabs and newlines. */
const secretUri: fc.Arbitrary<string> = fc
  .tuple(
    mostly('', ...C0_OR_SPACE),
    fc.tuple(...[...'orders'].map((c) => mostly(c, c.toUpperCase()))).map((cs) => cs.join('')),
    mostly('://', ':', ':/', ':///'),
    mostly('', 'u@', 'u:p@', '@'),
    fc.constantFrom('secret', 'secret', 'secrets', 'secre', 'public').chain((word) => fc.tuple(...[...word].map(spelt)).map((cs) => cs.join(''))),
    fc.constantFrom('', '.', ':80', ':', '?x', '?', '#f', '#', '/', '/.', '/..', '/x/..', '\\'),
    mostly('', ...C0_OR_SPACE),
    fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, fc.array(fc.tuple(fc.nat(), fc.constantFrom('\t', '\n', '\r')), { minLength: 1, maxLength: 2 })),
  )
  .map(([lead, scheme, sep, user, host, suffix, trail, inserts]) => {
    let uri = `${scheme}${sep}${user}${host}${suffix}`
    for (const [at, c] of inserts) {
      const i = at % (uri.length + 1)
      uri = uri.slice(0, i) + c + uri.slice(i)
    }
    return `${lead}${uri}${trail}`
  })

t.test('any URI a server may read as a protected resource is refused without its scope', async (t) => {
  const gw = await startGateway({
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: { resources: { "orders://secret": ["orders:read"] } }
`,
  })
  t.teardown(() => gw.close())
  const token = await gw.mint({ scope: 'mcp:tools' })
  let secretTried = 0
  let reached = 0
  await fc.assert(
    fc.asyncProperty(secretUri, fc.constantFrom('resources/read', 'resources/subscribe'), async (uri, method) => {
      const before = gw.upstream.seen.length
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { uri } })
      const res = await gw.send('/mcp', { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body })
      const forwarded = gw.upstream.seen.length > before
      const secret = readsAsSecret(uri)
      if (secret) secretTried++
      if (forwarded) reached++
      if (secret && (forwarded || (res.status !== 400 && res.status !== 403))) throw new Error(`${JSON.stringify(uri)} was not refused (${res.status})`)
    }),
    { seed: 3803, numRuns: 400 },
  )
  t.ok(secretTried > 40, `URIs read as the secret were tried (${secretTried})`)
  t.ok(reached > 5, `other URIs were forwarded (${reached})`)
})

/** A character as written, in upper case, or in its fullwidth form (NFKC folds it back). */
const charSpelt = (c: string): fc.Arbitrary<string> => {
  const code = c.charCodeAt(0)
  const wide = code >= 0x21 && code <= 0x7e ? String.fromCharCode(code + 0xfee0) : c
  return fc.oneof({ weight: 5, arbitrary: fc.constant(c) }, { weight: 1, arbitrary: fc.constantFrom(c.toUpperCase(), wide) })
}
const INVISIBLE = [' ', '\u200b', '\ufeff', '\u00ad', '\u2060', '\u0000', '\t', '\u00a0', '\u202e']
const edge = fc.oneof({ weight: 4, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom(...INVISIBLE) })

/** delete_order (or get_order) spelt with case, width and invisible characters a lenient server would drop. */
const toolName: fc.Arbitrary<string> = fc
  .tuple(edge, fc.constantFrom(FORBIDDEN, FORBIDDEN, 'get_order'), edge, fc.nat(), edge)
  .chain(([lead, word, inner, at, trail]) =>
    fc.tuple(...[...word].map(charSpelt)).map((cs) => {
      const core = cs.join('')
      const i = at % (core.length + 1)
      return `${lead}${core.slice(0, i)}${inner}${core.slice(i)}${trail}`
    }),
  )

t.test('any tool name a lenient server may read as a protected tool is refused without its scope', async (t) => {
  const gw = await startGateway({
    routes: (up) => `
  - name: mcp
    match: { path: /mcp }
    upstream: ${up}
    scopes: { "*": ["mcp:tools"] }
    mcp: { tools: { ${FORBIDDEN}: ["orders:write"] } }
`,
  })
  t.teardown(() => gw.close())
  const token = await gw.mint({ scope: 'mcp:tools' })
  let forbiddenTried = 0
  let reached = 0
  await fc.assert(
    fc.asyncProperty(toolName, async (name) => {
      const before = gw.upstream.seen.length
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {} } })
      const res = await gw.send('/mcp', { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body })
      const forwarded = gw.upstream.seen.length > before
      const forbidden = lenientRead(name) === FORBIDDEN
      if (forbidden) forbiddenTried++
      if (forwarded) reached++
      if (forbidden && (forwarded || (res.status !== 400 && res.status !== 403))) throw new Error(`${JSON.stringify(name)} was not refused (${res.status})`)
    }),
    { seed: 3805, numRuns: 300 },
  )
  t.ok(forbiddenTried > 100, `names read as the protected tool were tried (${forbiddenTried})`)
  t.ok(reached > 20, `other names were forwarded (${reached})`)
})
