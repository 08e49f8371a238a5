// Peer: the common Express stack for "a JWT-protected reverse proxy":
// express + express-oauth2-jwt-bearer (verifies the JWT on every request,
// RFC 9068 strict mode: typ at+jwt, iss, aud, exp, sub, client_id, jti) +
// requiredScopes + http-proxy-middleware with a keep-alive agent.
// Keys come from its JWKS URL (served here, fetched once and cached by jose),
// as such a deployment is configured.
//
// `node express-jwt-peer.mjs UPSTREAM ISSUER AUDIENCE PUBLIC_JWK_FILE SCOPE PATH_PREFIX`
import { readFileSync } from 'node:fs'
import { Agent } from 'node:http'
import express from 'express'
import { auth, requiredScopes } from 'express-oauth2-jwt-bearer'
import { createProxyMiddleware } from 'http-proxy-middleware'

const [upstream, issuer, audience, jwkFile, scope, prefix] = process.argv.slice(2)
const jwks = { keys: [JSON.parse(readFileSync(jwkFile, 'utf8'))] }

const app = express()
app.disable('x-powered-by')
app.disable('etag')
app.get('/.well-known/jwks.json', (_req, res) => res.json(jwks))

const server = app.listen(0, '127.0.0.1', () => {
  const url = `http://127.0.0.1:${server.address().port}`
  app.use(prefix, auth({ issuer, audience, jwksUri: `${url}/.well-known/jwks.json`, tokenSigningAlg: 'ES256', strict: true }), requiredScopes(scope))
  app.use(createProxyMiddleware({ target: upstream, pathFilter: prefix, agent: new Agent({ keepAlive: true, maxSockets: 128 }) }))
  process.stdout.write(JSON.stringify({ msg: 'ready', url }) + '\n')
})
server.keepAliveTimeout = 65_000
process.on('SIGTERM', () => process.exit(0))
