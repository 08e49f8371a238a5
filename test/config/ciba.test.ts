import t from 'tap'
import { at, describe, HASH, inspect } from './helpers.js'
import { validateClientMetadata } from '../../src/as/client-metadata.js'
import { OAuthError } from '../../src/errors.js'

/**
 * OpenID CIBA Core 1.0 client metadata (`backchannel_token_delivery_mode`,
 * `backchannel_client_notification_endpoint`) and `authorization_server.ciba`: read at load with
 * a message that says what to write; the same rules at registration.
 */

const client = (type: string, extra: string): string => `
authorization_server:
  clients:
    - client_id: c
      type: ${type}
${type === 'confidential' ? `      secret_hash: "${HASH}"\n` : ''}${extra
  .trim()
  .split('\n')
  .map((l) => `      ${l}`)
  .join('\n')}
`

t.test('a CIBA client: poll by default, ping with its endpoint', async (t) => {
  const poll = inspect(client('confidential', 'grant_types: [ciba]\nscopes: [openid]'))
  t.same(poll.problems, [], describe(poll.problems))
  t.same(poll.config?.authorizationServer?.clients[0]?.ciba, { deliveryMode: 'poll' })
  t.same(poll.config?.authorizationServer?.clients[0]?.grantTypes, ['urn:openid:params:grant-type:ciba'], 'the short name is the grant URN')
  t.same(poll.config?.authorizationServer?.clients[0]?.redirectUris, [], 'a CIBA-only client needs no redirect URI (OpenID CIBA Core 1.0 4)')
  const withCode = inspect(client('confidential', 'grant_types: [authorization_code, ciba]\nscopes: [openid]'))
  t.match(
    at(withCode.problems, 'authorization_server.clients[0].redirect_uris'),
    [{ message: /the `authorization_code` grant needs at least one redirect URI/ }],
    `with the code grant the redirect URI is still required: ${describe(withCode.problems)}`,
  )
  const ping = inspect(
    client(
      'confidential',
      'grant_types: [urn:openid:params:grant-type:ciba]\nbackchannel_token_delivery_mode: ping\nbackchannel_client_notification_endpoint: https://agent.example.com/ciba',
    ),
  )
  t.same(ping.problems, [], describe(ping.problems))
  t.same(ping.config?.authorizationServer?.clients[0]?.ciba, { deliveryMode: 'ping', notificationEndpoint: 'https://agent.example.com/ciba' })
  t.equal(inspect(client('confidential', 'grant_types: [client_credentials]')).config?.authorizationServer?.clients[0]?.ciba, undefined, 'no grant: no CIBA')
})

t.test('CIBA client settings that cannot work are refused at load', async (t) => {
  const cases: Array<[string, string, string, RegExp]> = [
    ['public', 'grant_types: [ciba]', 'grant_types', /a public client cannot use `ciba`/],
    [
      'confidential',
      'grant_types: [ciba]\nbackchannel_token_delivery_mode: ping',
      'backchannel_token_delivery_mode',
      /ping mode needs `backchannel_client_notification_endpoint`/,
    ],
    [
      'confidential',
      'grant_types: [ciba]\nbackchannel_client_notification_endpoint: https://a.example.com/n',
      'backchannel_client_notification_endpoint',
      /for `backchannel_token_delivery_mode: ping`/,
    ],
    [
      'confidential',
      'grant_types: [client_credentials]\nbackchannel_token_delivery_mode: poll',
      'backchannel_token_delivery_mode',
      /add `ciba` to `grant_types`/,
    ],
    ['confidential', 'grant_types: [ciba]\nbackchannel_token_delivery_mode: push', 'backchannel_token_delivery_mode', /not a CIBA token delivery mode/],
    [
      'confidential',
      'grant_types: [ciba]\nbackchannel_token_delivery_mode: ping\nbackchannel_client_notification_endpoint: http://agent.example.com/n',
      'backchannel_client_notification_endpoint',
      /use https/,
    ],
  ]
  for (const [type, body, key, message] of cases) {
    const { problems } = inspect(client(type, body))
    t.match(at(problems, `authorization_server.clients[0].${key}`), [{ message }], `${body}: ${describe(problems)}`)
  }
})

t.test('authorization_server.ciba: ttl and interval', async (t) => {
  const set = inspect('authorization_server:\n  ciba: { ttl: 2m, interval: 2s }\n')
  t.same(set.problems, [], describe(set.problems))
  t.same(set.config?.authorizationServer?.ciba, { ttlSec: 120, intervalSec: 2 })
  t.same(inspect('authorization_server: {}\n').config?.authorizationServer?.ciba, { ttlSec: 300, intervalSec: 5 }, 'defaults')
  const { problems } = inspect('authorization_server:\n  ciba: { ttl: 5s, interval: 5s }\n')
  t.match(at(problems, 'authorization_server.ciba.interval'), [{ message: /must be shorter than the backchannel request ttl/ }], describe(problems))
})

t.test('registration: the CIBA grant and its metadata, by the same rules', async (t) => {
  const rules = { allowedScopes: ['openid'] }
  const base = { redirect_uris: ['https://agent.example.com/cb'], grant_types: ['authorization_code', 'urn:openid:params:grant-type:ciba'] }
  const ping = validateClientMetadata(
    { ...base, backchannel_token_delivery_mode: 'ping', backchannel_client_notification_endpoint: 'https://agent.example.com/ciba' },
    rules,
  )
  t.equal(ping.backchannel_token_delivery_mode, 'ping')
  t.equal(ping.backchannel_client_notification_endpoint, 'https://agent.example.com/ciba')
  const refusals: Array<[string, Record<string, unknown>, RegExp]> = [
    ['a public client', { ...base, token_endpoint_auth_method: 'none', backchannel_token_delivery_mode: 'poll' }, /needs client authentication/],
    ['no mode', base, /must be poll or ping/],
    ['ping without endpoint', { ...base, backchannel_token_delivery_mode: 'ping' }, /ping mode needs/],
    [
      'an endpoint on a private address',
      { ...base, backchannel_token_delivery_mode: 'ping', backchannel_client_notification_endpoint: 'https://10.0.0.1/n' },
      /public host/,
    ],
    ['an http endpoint', { ...base, backchannel_token_delivery_mode: 'ping', backchannel_client_notification_endpoint: 'http://agent.example.com/n' }, /https/],
    [
      'the metadata without the grant',
      { redirect_uris: base.redirect_uris, backchannel_token_delivery_mode: 'poll' },
      /need the urn:openid:params:grant-type:ciba grant/,
    ],
  ]
  for (const [name, input, message] of refusals) {
    try {
      validateClientMetadata(input, rules)
      t.fail(`${name}: accepted`)
    } catch (err) {
      t.ok(err instanceof OAuthError, name)
      t.equal((err as OAuthError).error, 'invalid_client_metadata', name)
      t.match((err as OAuthError).description, message, name)
    }
  }
})
