import t from 'tap'
import { MAX_DATA_LOGO_BYTES } from '../../src/config/sections/client-metadata.js'
import { at, describe, inspect } from './helpers.js'

/** A public client with the given extra keys (one per line). */
const client = (extra: string): string => `
authorization_server:
  clients:
    - client_id: c
      type: public
      redirect_uris: [http://127.0.0.1/cb]
${extra
  .trim()
  .split('\n')
  .map((l) => `      ${l}`)
  .join('\n')}
`

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(16)]).toString('base64')
const GIF = Buffer.concat([Buffer.from('GIF89a'), Buffer.alloc(8)]).toString('base64')
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(8)]).toString('base64')
const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WEBPVP8 '), Buffer.alloc(8)]).toString('base64')
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>').toString('base64')

t.test('client metadata is read with its RFC 7591 names', async (t) => {
  const { config, problems } = inspect(
    client(`
name: Orders Web
logo_uri: https://cdn.example.com/orders/logo.png?v=2
policy_uri: https://app.example.com/privacy
tos_uri: http://localhost:3000/terms
post_logout_redirect_uris: [https://app.example.com/bye, com.example.app:/bye, https://app.example.com/bye]
`),
  )
  t.same(problems, [], describe(problems))
  t.same(config?.authorizationServer?.clients[0]?.metadata, {
    logoUri: 'https://cdn.example.com/orders/logo.png?v=2',
    policyUri: 'https://app.example.com/privacy',
    tosUri: 'http://localhost:3000/terms',
    postLogoutRedirectUris: ['https://app.example.com/bye', 'com.example.app:/bye'],
  })
})

t.test('an inline logo of each raster type is accepted', async (t) => {
  for (const [type, data] of [
    ['png', PNG],
    ['gif', GIF],
    ['jpeg', JPEG],
    ['webp', WEBP],
  ] as const) {
    const { config, problems } = inspect(client(`logo_uri: "data:image/${type};base64,${data}"`))
    t.same(problems, [], `${type}: ${describe(problems)}`)
    t.equal(config?.authorizationServer?.clients[0]?.metadata.logoUri, `data:image/${type};base64,${data}`)
  }
})

t.test('a logo that could run script, or is not an image, is refused at load', async (t) => {
  const cases: Array<[string, string | RegExp]> = [
    [`logo_uri: "data:image/svg+xml;base64,${SVG}"`, /SVG and other types are refused because they can carry script/],
    ['logo_uri: "data:image/svg+xml,<svg onload=alert(1)>"', /SVG and other types are refused/],
    ['logo_uri: "javascript:alert(1)"', /is not an https URL/],
    ['logo_uri: "JavaScript:alert(1)"', /is not an https URL/],
    ['logo_uri: http://cdn.example.com/logo.png', /is not an https URL/],
    ['logo_uri: "data:text/html;base64,PHNjcmlwdD4="', /must be `data:image\/png;base64/],
    [`logo_uri: "data:image/png,${PNG}"`, /must be `data:image\/png;base64/],
    [`logo_uri: "data:image/png;base64,${GIF}"`, 'the data is not a png image'],
    [
      `logo_uri: "data:image/png;base64,${Buffer.concat([Buffer.from(PNG, 'base64'), Buffer.alloc(MAX_DATA_LOGO_BYTES)]).toString('base64')}"`,
      /at most 32 KiB/,
    ],
    ['logo_uri: "https://user:pw@cdn.example.com/logo.png"', /credentials/],
    ['logo_uri: "https://cdn.example.com/logo.png#x"', /fragment/],
  ]
  for (const [body, message] of cases) {
    const { problems } = inspect(client(body))
    t.match(at(problems, 'authorization_server.clients[0].logo_uri'), [{ message }], `${body.slice(0, 60)}: ${describe(problems)}`)
    t.equal(problems.length, 1, describe(problems))
  }
})

t.test('policy and terms links are https, http only on loopback', async (t) => {
  const cases: Array<[string, string, string | RegExp]> = [
    ['policy_uri: http://app.example.com/privacy', 'policy_uri', /use https/],
    ['tos_uri: "javascript:alert(1)"', 'tos_uri', /`javascript:` URLs are not allowed here/],
    ['tos_uri: terms.html', 'tos_uri', /not an absolute URL/],
    ['policy_uri: "https://u:p@app.example.com/p"', 'policy_uri', /credentials/],
  ]
  for (const [body, key, message] of cases) {
    const { problems } = inspect(client(body))
    t.match(at(problems, `authorization_server.clients[0].${key}`), [{ message }], `${body}: ${describe(problems)}`)
    t.equal(problems.length, 1, describe(problems))
  }
  for (const ok of ['http://127.0.0.1:8080/p', 'http://[::1]/p', 'http://localhost/p']) {
    t.same(inspect(client(`policy_uri: "${ok}"`)).problems, [], ok)
  }
})

t.test('post-logout redirect URIs: absolute, no fragment, no script scheme', async (t) => {
  const cases: Array<[string, string | RegExp]> = [
    ['post_logout_redirect_uris: ["javascript:alert(1)//"]', /`javascript:` URIs cannot be redirect targets/],
    ['post_logout_redirect_uris: ["data:text/html,x"]', /`data:` URIs cannot be redirect targets/],
    ['post_logout_redirect_uris: ["https://app.example.com/bye#x"]', /must not contain a fragment/],
    ['post_logout_redirect_uris: [bye]', /not an absolute URI/],
  ]
  for (const [body, message] of cases) {
    const { problems } = inspect(client(body))
    t.match(at(problems, 'authorization_server.clients[0].post_logout_redirect_uris[0]'), [{ message }], `${body}: ${describe(problems)}`)
    t.equal(problems.length, 1, describe(problems))
  }
})
