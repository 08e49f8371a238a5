import t from 'tap'
import { at, describe, inspect } from './helpers.js'

/**
 * authorization_server.webauthn: the relying party follows public_url, and a
 * configuration no browser could use (an RP ID that does not cover an origin,
 * an IP address as RP ID) is refused at load, where it was written.
 */

const webauthnOf = (yaml: string): unknown => inspect(yaml).config?.authorizationServer?.webauthn

t.test('defaults follow public_url', async (t) => {
  t.same(webauthnOf('public_url: https://id.example.com/auth\nauthorization_server: {}\n'), {
    enabled: true,
    rpId: 'id.example.com',
    rpName: 'bearward',
    origins: ['https://id.example.com'],
  })
})

t.test('a parent domain as RP ID, with the origins it covers', async (t) => {
  const yaml = `public_url: https://id.example.com
authorization_server:
  webauthn: { rp_id: example.com, rp_name: Example, origins: ["https://id.example.com", "https://login.example.com:8443"] }
`
  const { problems } = inspect(yaml)
  t.same(problems, [], describe(problems))
  t.same(webauthnOf(yaml), { enabled: true, rpId: 'example.com', rpName: 'Example', origins: ['https://id.example.com', 'https://login.example.com:8443'] })
})

t.test('an RP ID that does not cover an origin, or public_url, is refused at that value', async (t) => {
  const listed = inspect(`public_url: https://id.example.com
authorization_server:
  webauthn:
    rp_id: example.com
    origins:
      - https://id.example.com
      - https://evil-example.com
`)
  t.match(
    at(listed.problems, 'authorization_server.webauthn.origins[1]'),
    [{ line: 7, message: /does not cover `evil-example.com`/ }],
    describe(listed.problems),
  )
  t.equal(listed.problems.length, 1)
  const implicit = inspect('public_url: https://id.example.com\nauthorization_server:\n  webauthn: { rp_id: other.com }\n')
  t.match(at(implicit.problems, 'authorization_server.webauthn.rp_id'), [{ line: 3, message: /does not cover public_url's host/ }], describe(implicit.problems))
  const shape = inspect('public_url: https://id.example.com\nauthorization_server:\n  webauthn: { rp_id: "https://example.com" }\n')
  t.match(at(shape.problems, 'authorization_server.webauthn.rp_id'), [{ message: /lower-case host name/ }])
  const origin = inspect('public_url: https://id.example.com\nauthorization_server:\n  webauthn: { origins: ["https://id.example.com/login"] }\n')
  t.match(at(origin.problems, 'authorization_server.webauthn.origins[0]'), [{ message: /no path/ }])
})

t.test('an IP address is no RP ID: passkeys are off, and asking for them is a problem', async (t) => {
  t.match(webauthnOf('public_url: http://127.0.0.1:8080\nauthorization_server: {}\n'), { enabled: false, rpId: '127.0.0.1' })
  const asked = inspect('public_url: http://127.0.0.1:8080\nauthorization_server:\n  webauthn: { enabled: true }\n')
  t.match(at(asked.problems, 'authorization_server.webauthn.enabled'), [{ line: 3, message: /need a domain name/ }], describe(asked.problems))
  t.match(webauthnOf('public_url: https://id.example.com\nauthorization_server:\n  webauthn: { enabled: false }\n'), { enabled: false })
})
