// Peer: node-oidc-provider (panva) issuing client_credentials access tokens
// configured like bearward's AS in the scenario: ES256 JWT access tokens
// (RFC 9068, via a resource server with accessTokenFormat jwt), one
// confidential client with client_secret_basic, in-memory adapter.
//
// `node oidc-provider-peer.mjs ISSUER PRIVATE_JWK_FILE CLIENT_ID CLIENT_SECRET AUDIENCE SCOPE`
import { readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import Provider from 'oidc-provider'

const [issuer, jwkFile, clientId, clientSecret, audience, scope] = process.argv.slice(2)
const privateJwk = JSON.parse(readFileSync(jwkFile, 'utf8'))

const provider = new Provider(issuer, {
  jwks: { keys: [privateJwk] },
  clients: [
    {
      client_id: clientId,
      client_secret: clientSecret,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'ES256',
      scope,
    },
  ],
  scopes: [scope],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => audience,
      useGrantedResource: () => true,
      getResourceServerInfo: () => ({
        scope,
        audience,
        accessTokenTTL: 600,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
})
provider.on('server_error', (_ctx, err) => process.stderr.write(`server_error: ${err.message}\n`))

const server = createServer(provider.callback())
server.keepAliveTimeout = 65_000
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ msg: 'ready', url: `http://127.0.0.1:${server.address().port}` }) + '\n')
})
process.on('SIGTERM', () => process.exit(0))
