/**
 * Two `bin/bearward` instances on one shared store (a Redis topology the test
 * started), as users run them behind a load balancer: the same config but the
 * listen port, one signing key file for both, and A's address as the
 * `public_url` of both (the issuer every token names). Plus the few calls the
 * multi-instance tests make: a service token, a revocation, a gateway call.
 */
import { createHash, randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { generatePrivateJwk } from '../../src/keys/keyset.js'
import { asConfigYaml, DEMO_PASSWORD, DEMO_SECRET, oneIssuer } from './as-config.js'
import { startBinOrCleanUp, tempConfig, type RunningBin } from './bin.js'
import { Browser, authorizeAsPerson } from './browser.js'
import { basic } from './client-auth.js'
import type { ConfigTree } from './config-tree.js'
import { freePort } from './http.js'

export interface StorePair {
  a: RunningBin
  b: RunningBin
  /** Stop both instances, then run the caller's cleanup and remove the config directory. */
  stop(): Promise<void>
}

export interface StorePairOptions {
  /** The `store:` value: a Redis URL, or the map form (e.g. `{ cluster: [...], replica_wait: {...} }`). */
  store: string | ConfigTree
  /** The upstream's base URL (the route `/orders` goes there). */
  upstream: string
  /** The caller's own cleanup (its upstream, its Redis), run after the instances stop, on failure too. */
  cleanup: () => Promise<void>
}

/** Start A, then B; if either fails to start, what was started is stopped and `cleanup` runs before the throw. */
export async function startStorePair(o: StorePairOptions): Promise<StorePair> {
  const cfg = await tempConfig('')
  const cleanup = async (): Promise<void> => {
    await o.cleanup()
    await cfg.cleanup()
  }
  const keyFile = join(cfg.dir, 'signing.jwk')
  await writeFile(keyFile, JSON.stringify(await generatePrivateJwk('ES256', 'k1')))
  const portA = await freePort()
  const yaml = (port: number): Promise<string> => asConfigYaml({ port, upstream: o.upstream, store: o.store, override: oneIssuer(portA, keyFile) })
  const fileA = join(cfg.dir, 'a.yaml')
  const fileB = join(cfg.dir, 'b.yaml')
  await writeFile(fileA, await yaml(portA))
  await writeFile(fileB, await yaml(await freePort()))
  const a = await startBinOrCleanUp(fileA, cleanup)
  const b = await startBinOrCleanUp(fileB, async () => {
    await a.stop()
    await cleanup()
  })
  return {
    a,
    b,
    async stop() {
      await Promise.all([a.stop(), b.stop()])
      await cleanup()
    },
  }
}

/** Re-exported so the files that import it from here keep working; it lives in client-auth.ts. */
export { basic } from './client-auth.js'

/** POST a form with an optional Authorization header, bounded at 10 s (a stuck instance fails the test, not the run). */
export function form(url: string, body: Record<string, string>, auth?: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
  if (auth) headers.authorization = auth
  return fetch(url, { method: 'POST', headers, body: new URLSearchParams(body), signal: AbortSignal.timeout(10_000) })
}

/** A client_credentials token for the config's `service` client, scope orders:read. */
export async function serviceToken(bin: RunningBin): Promise<string> {
  const res = await form(`${bin.url}/token`, { grant_type: 'client_credentials', scope: 'orders:read' }, basic('service', DEMO_SECRET))
  if (res.status !== 200) throw new Error(`token: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { access_token: string }).access_token
}

/** RFC 7009 revocation of `token` through `bin`, as the service client. */
export const revoke = (bin: RunningBin, token: string): Promise<Response> => form(`${bin.url}/revoke`, { token }, basic('service', DEMO_SECRET))

/** A call to the protected route through `bin`'s gateway. */
export const callOrders = (bin: RunningBin, token: string): Promise<Response> =>
  fetch(`${bin.url}/orders/1`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) })

/** The claims of a JWT's payload, unchecked (the test reads what it was given). */
export const jwtClaims = (jwt: string): { jti: string; grant_id?: string } =>
  JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as { jti: string; grant_id?: string }

/** The config's `web` client's redirect URI (as-config.ts). */
const WEB_CALLBACK = 'http://127.0.0.1:5555/callback'

/**
 * alice signs in at `bin` (login and consent pages over HTTP) for the `web`
 * client with PKCE, and the client redeems the code: the token response.
 */
export async function aliceTokens(bin: RunningBin, scope: string): Promise<{ access_token: string; refresh_token?: string; id_token?: string }> {
  const verifier = randomBytes(32).toString('base64url')
  const url = `${bin.url}/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: WEB_CALLBACK,
    scope,
    state: 's',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })}`
  const cb = await authorizeAsPerson(new Browser(), url, { username: 'alice', password: DEMO_PASSWORD })
  const res = await form(
    `${bin.url}/token`,
    { grant_type: 'authorization_code', code: cb.searchParams.get('code') ?? '', redirect_uri: WEB_CALLBACK, code_verifier: verifier },
    basic('web', DEMO_SECRET),
  )
  if (res.status !== 200) throw new Error(`token: ${res.status} ${await res.text()}`)
  return (await res.json()) as { access_token: string; refresh_token?: string; id_token?: string }
}
