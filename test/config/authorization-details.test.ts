/**
 * Config of RFC 9396 rich authorization requests:
 * `authorization_server.authorization_details_types` (schemas inline or in a
 * file, compiled at load), a client's `authorization_details_types`, a
 * route's `authorization_details` and `identity_headers.authorization_details`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'

const server = (types: string, clientTypes = '[payment_initiation]'): string => `
public_url: https://bearward.example.com
authorization_server:
  authorization_details_types:
${types
  .trim()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
  clients:
    - client_id: payer
      type: confidential
      secret_hash: "${HASH}"
      redirect_uris: [https://pay.example.com/cb]
      authorization_details_types: ${clientTypes}
`

t.test('types with inline schemas and schema files', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rar-config-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'account.json'), JSON.stringify({ type: 'object', properties: { locations: { type: 'array' } } }))
  const c = inspect(
    server(`payment_initiation: { schema: { type: object, required: [instructedAmount] } }
account_information: { schema: ${join(dir, 'account.json')} }`),
  )
  t.same(c.problems, [], describe(c.problems))
  t.same(c.config?.authorizationServer?.authorizationDetailsTypes, {
    payment_initiation: { type: 'object', required: ['instructedAmount'] },
    account_information: { type: 'object', properties: { locations: { type: 'array' } } },
  })
  t.same(c.config?.authorizationServer?.clients[0]?.authorizationDetailsTypes, ['payment_initiation'])
})

t.test('a schema that cannot be used is refused at load, saying why', async (t) => {
  const typo = inspect(server('payment_initiation: { schema: { type: object, propertiez: {} } }'))
  t.match(at(typo.problems, 'authorization_server.authorization_details_types.payment_initiation.schema'), [
    { message: /^type `payment_initiation`: its JSON Schema cannot be used: strict mode: unknown keyword: "propertiez"/ },
  ])
  const remote = inspect(server('payment_initiation: { schema: { $ref: "https://schemas.example.com/p.json" } }'))
  t.match(at(remote.problems, 'authorization_server.authorization_details_types.payment_initiation.schema'), [{ message: /can't resolve reference/ }])
  const missing = inspect(server('payment_initiation: { schema: /nonexistent/payment.json }'))
  t.match(at(missing.problems, 'authorization_server.authorization_details_types.payment_initiation.schema'), [
    { message: /^cannot read the schema file \/nonexistent\/payment.json: ENOENT/ },
  ])
  const none = inspect(server('payment_initiation: {}'))
  t.match(at(none.problems, 'authorization_server.authorization_details_types.payment_initiation.schema'), [{ message: /needs `schema`/ }])
  const spaced = inspect(server('"payment initiation": { schema: { type: object } }', '[]'))
  t.match(at(spaced.problems, 'authorization_server.authorization_details_types["payment initiation"]'), [
    { message: /not a usable authorization details type/ },
  ])
})

t.test('a client may name only declared types', async (t) => {
  const c = inspect(server('payment_initiation: { schema: { type: object } }', '[payment_initiation, wire_transfer]'))
  t.match(at(c.problems, 'authorization_server.clients[0].authorization_details_types'), [
    {
      message:
        'client `payer` names the authorization details type `wire_transfer`, which is not declared under `authorization_server.authorization_details_types`',
    },
  ])
})

t.test("a route's authorization_details rule and header", async (t) => {
  const route = (extra: string): string => `
routes:
  - name: pay
    match: { path: /pay }
    upstream: http://127.0.0.1:3000
    issuers: [corp]
${extra}
issuers:
  - id: corp
    issuer: https://idp.example.com
    jwks_uri: https://idp.example.com/jwks.json
`
  const c = inspect(route('    authorization_details: { type: payment_initiation }\n    identity_headers: { authorization_details: X-Payment }'))
  t.same(c.problems, [], describe(c.problems))
  t.same(c.config?.routes[0]?.authorizationDetails, { type: 'payment_initiation' })
  t.equal(c.config?.routes[0]?.identityHeaders.authorizationDetails, 'X-Payment')
  t.equal(inspect(route('')).config?.routes[0]?.authorizationDetails, undefined, 'absent: no rule')
  const clash = inspect(route('    identity_headers: { authorization_details: X-Auth-Subject }'))
  t.ok(at(clash.problems, 'routes[0].identity_headers.authorization_details').length > 0, 'a header name used twice is refused')
  const noType = inspect(route('    authorization_details: {}'))
  t.ok(at(noType.problems, 'routes[0].authorization_details.type').length > 0, 'type is required')
})
