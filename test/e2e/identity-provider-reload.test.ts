/**
 * Identity providers follow the config through `bin/bearward`, as an
 * operator edits it: a provider whose discovery fails at start is reported
 * with its position (no secret in the log) while the others sign people in;
 * a reload adds one (its button appears, sign-in through it works) and
 * removes another (button and callback gone); a provider that fails on
 * reload is reported the same way, and the rest keep working.
 */
import t from 'tap'
import { writeFile } from 'node:fs/promises'
import { asConfigYaml, DEMO_SECRET } from '../helpers/as-config.js'
import { startBinOrCleanUp, tempConfig, type RunningBin } from '../helpers/bin.js'
import type { ConfigTree } from '../helpers/config-tree.js'
import { Browser } from '../helpers/browser.js'
import { eventually, freePort } from '../helpers/http.js'
import { basic, form } from '../helpers/store-pair.js'
import { OP_CLIENT_SECRET, openTestOp } from '../helpers/upstream-op.js'
import { upstreamSignIn } from '../helpers/upstream-sign-in.js'
import { startUpstream } from '../helpers/upstream.js'
import { createHash, randomBytes } from 'node:crypto'

t.setTimeout(180_000)

const CALLBACK = 'http://127.0.0.1:5555/callback'

const up = await startUpstream('orders')
const port = await freePort()
const base = `http://127.0.0.1:${port}`
const opA = await openTestOp()
const opC = await openTestOp()
for (const [op, id] of [
  [opA, 'corp'],
  [opC, 'partner'],
] as const) {
  op.serve([`${base}/login/upstream/${id}/callback`])
}
const dead = async (): Promise<string> => `http://127.0.0.1:${await freePort()}`

const provider = (id: string, name: string, issuer: string): ConfigTree => ({
  id,
  name,
  issuer,
  client_id: 'bearward',
  client_secret: OP_CLIENT_SECRET,
  claims: { email: 'email' },
})
const configWith = (...providers: ConfigTree[]): Promise<string> =>
  asConfigYaml({ port, upstream: up.url, override: { authorization_server: { identity_providers: providers } } })

const cfg = await tempConfig(await configWith(provider('corp', 'Corp SSO', opA.issuer), provider('lab', 'Lab SSO', await dead())))
const bin: RunningBin = await startBinOrCleanUp(cfg.file, async () => {
  await Promise.all([up.close(), opA.stop(), opC.stop()])
  await cfg.cleanup()
})
t.teardown(async () => {
  await bin.stop()
  await Promise.all([up.close(), opA.stop(), opC.stop()])
  await cfg.cleanup()
})

/** A sign-in through `provider` from a fresh authorization request; the client's code redeemed, the access token's `sub` returned. */
async function signInThrough(providerId: string, login: string): Promise<{ sub?: string; page?: { status: number; html: string } }> {
  const verifier = randomBytes(32).toString('base64url')
  const start = `${base}/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: CALLBACK,
    scope: 'openid email orders:read',
    state: 's',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })}`
  const end = await upstreamSignIn(new Browser(), start, new URL(CALLBACK).origin, providerId, login)
  if (end.kind === 'page') return { page: { status: end.status, html: end.html } }
  const res = await form(
    `${base}/token`,
    { grant_type: 'authorization_code', code: end.url.searchParams.get('code') ?? '', redirect_uri: CALLBACK, code_verifier: verifier },
    basic('web', DEMO_SECRET),
  )
  const body = (await res.json()) as { access_token?: string }
  const claims = JSON.parse(Buffer.from((body.access_token ?? '').split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: string }
  return claims.sub === undefined ? {} : { sub: claims.sub }
}

const loginPage = async (): Promise<string> => {
  const res = await fetch(
    `${base}/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'web', redirect_uri: CALLBACK, scope: 'openid', state: 's', code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWZi3k8n-zfaE', code_challenge_method: 'S256' })}`,
  )
  return await res.text()
}

const failures = (id: string): Record<string, unknown>[] =>
  bin.lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.event === 'identity_provider_discovery_failed' && e.provider === id)

const reloaded = async (yaml: string): Promise<void> => {
  const before = bin.lines.filter((l) => l.includes('"config reloaded"')).length
  await writeFile(cfg.file, yaml)
  if (!(await eventually(() => bin.lines.filter((l) => l.includes('"config reloaded"')).length > before, 15_000))) {
    throw new Error(`no reload seen:\n${bin.lines.slice(-5).join('\n')}`)
  }
}

t.test('at start: the provider that cannot be discovered is reported with its position; the other signs people in', async (t) => {
  const report = await bin.waitForLog((e) => e.event === 'identity_provider_discovery_failed' && e.provider === 'lab', 15_000)
  t.equal(report.position, 'authorization_server.identity_providers[1]')
  t.notOk(
    bin.lines.some((l) => l.includes(OP_CLIENT_SECRET)),
    'no client secret in the log',
  )
  t.same(await signInThrough('corp', 'ann'), { sub: 'corp:ann' }, 'sign-in through Corp SSO gives the client a token for corp:ann')
  const lab = await signInThrough('lab', 'ann')
  t.equal(lab.page?.status, 503, 'Lab SSO: a page, not a redirect loop')
  t.match(lab.page?.html, 'Lab SSO is not available')
})

t.test('a reload adds a provider and removes another', async (t) => {
  await reloaded(await configWith(provider('corp', 'Corp SSO', opA.issuer), provider('partner', 'Partner SSO', opC.issuer)))
  const html = await loginPage()
  t.match(html, 'Continue with Corp SSO')
  t.match(html, 'Continue with Partner SSO', 'the new provider has its button')
  t.notMatch(html, 'Lab SSO', 'the removed one has none')
  t.same(await signInThrough('partner', 'bea'), { sub: 'partner:bea' }, 'sign-in through the new provider works')
  t.same(await signInThrough('corp', 'ann'), { sub: 'corp:ann' }, 'and through the one that stayed')
  const gone = await fetch(`${base}/login/upstream/lab/callback?code=x&state=y`)
  t.equal(gone.status, 404, "the removed provider's callback is gone")
  await gone.arrayBuffer()
})

t.test('a provider that fails on reload is reported with its position; the others keep working', async (t) => {
  const before = failures('partner').length
  await reloaded(await configWith(provider('corp', 'Corp SSO', opA.issuer), provider('partner', 'Partner SSO', await dead())))
  t.ok(await eventually(() => failures('partner').length > before, 15_000), 'the failed discovery is logged')
  t.equal(failures('partner').at(-1)?.position, 'authorization_server.identity_providers[1]')
  t.notOk(
    bin.lines.some((l) => l.includes(OP_CLIENT_SECRET)),
    'no client secret in the log',
  )
  t.same(await signInThrough('corp', 'cy'), { sub: 'corp:cy' }, 'Corp SSO still signs people in')
  const partner = await signInThrough('partner', 'bea')
  t.equal(partner.page?.status, 503)
  t.match(partner.page?.html, 'Partner SSO is not available')
})
