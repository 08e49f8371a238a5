import t from 'tap'
import { at, describe, inspect } from './helpers.js'

/**
 * `backchannel_logout_uri` and `backchannel_logout_session_required` of a configured client, and
 * `backchannel_logout` / `on_logout` of an identity provider: read with their spec names, refused
 * at load with a message that says what to write.
 */

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

t.test('a client’s back-channel logout URI and session requirement are read', async (t) => {
  const { config, problems } = inspect(client('backchannel_logout_uri: https://app.example.com/logout/backchannel\nbackchannel_logout_session_required: true'))
  t.same(problems, [], describe(problems))
  t.same(config?.authorizationServer?.clients[0]?.backchannelLogout, { uri: 'https://app.example.com/logout/backchannel', sessionRequired: true })
  const plain = inspect(client('backchannel_logout_uri: http://127.0.0.1:8080/bcl'))
  t.same(plain.problems, [], 'http on loopback, for development')
  t.same(
    plain.config?.authorizationServer?.clients[0]?.backchannelLogout,
    { uri: 'http://127.0.0.1:8080/bcl', sessionRequired: false },
    'session_required defaults to false',
  )
  t.equal(inspect(client('name: C')).config?.authorizationServer?.clients[0]?.backchannelLogout, undefined, 'absent: none')
})

t.test('a back-channel logout URI that is not https, has credentials or a fragment is refused at load', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['backchannel_logout_uri: http://app.example.com/bcl', /use https \(http is accepted only for localhost/],
    ['backchannel_logout_uri: "https://u:p@app.example.com/bcl"', /credentials/],
    ['backchannel_logout_uri: "https://app.example.com/bcl#x"', /must not contain a fragment/],
    ['backchannel_logout_uri: /bcl', /not an absolute URL/],
  ]
  for (const [body, message] of cases) {
    const { problems } = inspect(client(body))
    t.match(at(problems, 'authorization_server.clients[0].backchannel_logout_uri'), [{ message }], `${body}: ${describe(problems)}`)
  }
  const { problems } = inspect(client('backchannel_logout_session_required: true'))
  t.match(
    at(problems, 'authorization_server.clients[0].backchannel_logout_session_required'),
    [{ message: /set `backchannel_logout_uri` too/ }],
    describe(problems),
  )
})

const provider = (extra = ''): string => `
authorization_server:
  identity_providers:
    - id: corp
      name: Corp SSO
      issuer: https://sso.example.com
      client_id: bearward${extra}
`

t.test('an identity provider’s backchannel_logout and on_logout are read, with their defaults', async (t) => {
  const plain = inspect(provider())
  t.same(plain.problems, [], describe(plain.problems))
  t.match(plain.config?.authorizationServer?.identityProviders[0], { backchannelLogout: false, onLogout: 'sessions' }, 'off, and sessions only')
  const on = inspect(provider('\n      backchannel_logout: true\n      on_logout: grants'))
  t.same(on.problems, [], describe(on.problems))
  t.match(on.config?.authorizationServer?.identityProviders[0], { backchannelLogout: true, onLogout: 'grants' })
})

t.test('on_logout must be sessions or grants, and needs backchannel_logout', async (t) => {
  const wrong = inspect(provider('\n      backchannel_logout: true\n      on_logout: everything'))
  t.ok(at(wrong.problems, 'authorization_server.identity_providers[0].on_logout').length > 0, describe(wrong.problems))
  const alone = inspect(provider('\n      on_logout: grants'))
  t.match(
    at(alone.problems, 'authorization_server.identity_providers[0].on_logout'),
    [{ message: /set `backchannel_logout: true` too/ }],
    describe(alone.problems),
  )
})
