/**
 * Attacks on what bearward signs for an upstream (`upstream_token: exchange`
 * / `assertion`, #38): a token bearward signs carries bearward's `iss`, so
 * its `sub` is read as a subject of bearward's. A person of another trusted
 * issuer (`issuers[]`) whose `sub` is spelt like one of bearward's own
 * subjects (`alice`) must never come out of the gateway as that subject.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { decodeJwt, exportJWK, generateKeyPair, SignJWT } from 'jose'
import { accessClaims, AT_HEADER, signEs256, startTarget } from '../helpers/attack.js'

t.test("another issuer's subject never passes for one of bearward's own in what bearward signs for the upstream", async (t) => {
  const corpKeys = await generateKeyPair('ES256')
  const corpJwk = { ...(await exportJWK(corpKeys.publicKey)), kid: 'c1', alg: 'ES256' }
  const keyServer = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ keys: [corpJwk] }))
  })
  await new Promise<void>((resolve) => keyServer.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => keyServer.close(() => resolve())))
  const corp = `http://127.0.0.1:${(keyServer.address() as AddressInfo).port}`

  const target = await startTarget({
    top: `issuers: [{ id: corp, issuer: "${corp}", jwks_uri: "${corp}/jwks", algorithms: [ES256] }]`,
    routes: (up) =>
      [
        `- { name: minted, match: { path: /minted }, upstream: "${up}", issuers: [self, corp], upstream_token: exchange, upstream_audience: "http://orders.internal" }`,
        `- { name: asserted, match: { path: /asserted }, upstream: "${up}", issuers: [self, corp], upstream_token: assertion, upstream_audience: "http://orders.internal" }`,
      ].join('\n'),
  }).catch((err: Error) => err)
  if (target instanceof Error) {
    // Refusing the config outright is one way to hold: bearward then never signs a foreign subject.
    t.match(
      target.message,
      /upstream_token: exchange` signs the subject under bearward's own `iss`, so a token of `corp`/,
      'the config is refused, naming the foreign issuer',
    )
    return
  }
  t.teardown(() => target.close())

  const now = Math.floor(Date.now() / 1000)
  const corpToken = await new SignJWT({ sub: 'alice', client_id: 'corp-app', scope: 'orders:read', jti: randomBytes(8).toString('base64url') })
    .setProtectedHeader({ alg: 'ES256', kid: 'c1', typ: 'at+jwt' })
    .setIssuer(corp)
    .setAudience(target.url)
    .setIssuedAt(now)
    .setExpirationTime(now + 300)
    .sign(corpKeys.privateKey)
  const ownToken = signEs256(target.key, AT_HEADER, accessClaims(target))

  const signedFor = async (path: string, token: string): Promise<Record<string, unknown> | null> => {
    const before = target.upstream.seen.length
    const res = await fetch(`${target.url}${path}`, { headers: { authorization: `Bearer ${token}` } })
    await res.arrayBuffer()
    const seen = target.upstream.seen.slice(before)
    if (res.status !== 200) return null
    const header =
      path === '/minted' ? String(seen[0]?.headers.authorization ?? '').replace(/^Bearer /, '') : String(seen[0]?.headers['x-bearward-assertion'] ?? '')
    return decodeJwt(header) as Record<string, unknown>
  }
  for (const path of ['/minted', '/asserted']) {
    const own = await signedFor(path, ownToken)
    t.match(own, { iss: target.url, sub: 'alice' }, `${path}: bearward's own alice`)
    const foreign = await signedFor(path, corpToken)
    t.ok(
      foreign === null || foreign.iss !== own?.iss || foreign.sub !== own?.sub,
      `${path}: corp's alice is not signed as bearward's alice (${JSON.stringify(foreign)})`,
    )
  }
})
