/**
 * The audit trail through bin/bearward (issue #42): a person fails a
 * sign-in, signs in, allows `web`; the client gets tokens and revokes them;
 * the config is reloaded; SIGTERM. The file holds the events in that order,
 * `bearward audit verify` exits 0 on it and 1 on a tampered copy (naming
 * the line), and no password, secret, code or token is in any line.
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { asConfig, DEMO_PASSWORD, DEMO_SECRET } from '../helpers/as-config.js'
import { BIN, childEnv, startBin, tempConfig } from '../helpers/bin.js'
import { Browser, authorizeAsPerson, parseForms } from '../helpers/browser.js'
import { configYaml } from '../helpers/config-tree.js'
import { freePort } from '../helpers/http.js'
import { basic, form } from '../helpers/store-pair.js'
import { startUpstream } from '../helpers/upstream.js'

const CALLBACK = 'http://127.0.0.1:5555/callback'
const WRONG_PASSWORD = 'not-the-password-7c1e2f'

function verify(file: string): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, [BIN, 'audit', 'verify', file], { env: childEnv(), encoding: 'utf8' })
  return { status: run.status, stdout: run.stdout, stderr: run.stderr }
}

t.test('sign in, consent, revoke, reload, SIGTERM: the events in order, verified, no secret in any line', async (t) => {
  const up = await startUpstream('orders')
  const port = await freePort()
  const dir = await tempConfig('')
  const config = await asConfig({ port, upstream: up.url, override: { audit: { destination: 'file:audit.jsonl' } } })
  const configFile = join(dir.dir, 'gateway.yaml')
  writeFileSync(configFile, configYaml(config))
  const auditFile = join(dir.dir, 'audit.jsonl')
  const bin = await startBin(configFile)
  t.teardown(async () => {
    await bin.stop()
    await up.close()
    await dir.cleanup()
  })

  const verifier = randomBytes(32).toString('base64url')
  const authorize = `${bin.url}/authorize?${new URLSearchParams({
    response_type: 'code',
    client_id: 'web',
    redirect_uri: CALLBACK,
    scope: 'openid orders:read',
    state: 's1',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  })}`

  // A wrong password first, from a browser of its own.
  const stranger = new Browser()
  const first = await stranger.follow(await stranger.get(authorize), authorize, bin.url)
  const login = parseForms(await first.res.text(), first.url).find((f) => 'username' in f.fields)
  if (login === undefined) throw new Error('no sign-in form')
  const refused = await stranger.submit(login, { username: 'alice', password: WRONG_PASSWORD })
  t.equal(refused.status, 400, 'the wrong password is refused')

  const person = new Browser()
  const callback = await authorizeAsPerson(person, authorize, { username: 'alice', password: DEMO_PASSWORD })
  const code = callback.searchParams.get('code') ?? ''
  const exchanged = await form(
    `${bin.url}/token`,
    { grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier },
    basic('web', DEMO_SECRET),
  )
  t.equal(exchanged.status, 200)
  const tokens = (await exchanged.json()) as { access_token: string; refresh_token: string }
  const jti = (JSON.parse(Buffer.from(tokens.access_token.split('.')[1] ?? '', 'base64url').toString()) as { jti: string }).jti
  t.equal((await form(`${bin.url}/revoke`, { token: tokens.access_token }, basic('web', DEMO_SECRET))).status, 200)
  t.equal((await form(`${bin.url}/revoke`, { token: tokens.refresh_token, token_type_hint: 'refresh_token' }, basic('web', DEMO_SECRET))).status, 200)

  const metrics = await (await fetch(`${bin.admin}/metrics`)).text()
  t.match(metrics, /bearward_audit_events_total\{event="signin.succeeded"\} 1/)
  t.match(metrics, /bearward_audit_events_total\{event="signin.failed"\} 1/)

  // A reload, then SIGTERM at once: nothing recorded before it is lost.
  writeFileSync(configFile, `${configYaml(config)}\n# changed\n`)
  await bin.waitForLog((e) => e.msg === 'config reloaded')
  t.equal(await bin.stop('SIGTERM'), 0)

  const text = readFileSync(auditFile, 'utf8')
  const lines = text.trimEnd().split('\n')
  const events = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
  t.same(
    events.map((e) => e.event),
    ['audit.started', 'signin.failed', 'signin.succeeded', 'grant.created', 'token.revoked', 'grant.revoked', 'config.reloaded'],
    'the events, in the order they happened',
  )
  t.match(events[1], { actor: { kind: 'anonymous' }, subject: { kind: 'person', id: 'alice' }, outcome: 'failure', reason: 'invalid_credentials' })
  t.match(events[2], { actor: { kind: 'person', id: 'alice' }, address: '127.0.0.1', outcome: 'success', reason: 'password' })
  t.match(events[3], { subject: { kind: 'grant' }, client_id: 'web' })
  t.match(events[4], { actor: { kind: 'client', id: 'web' }, subject: { kind: 'token', jti } })
  t.match(events[5], { subject: { kind: 'grant', id: (events[3] as { subject: { id: string } }).subject.id }, reason: 'refresh_token_revoked' })

  for (const secret of [DEMO_PASSWORD, WRONG_PASSWORD, DEMO_SECRET, code, verifier, tokens.access_token, tokens.refresh_token]) {
    t.notOk(text.includes(secret), `no line holds ${secret.slice(0, 12)}…`)
  }

  const ok = verify(auditFile)
  t.equal(ok.status, 0, ok.stderr)
  t.match(ok.stdout, /^ok: 6 events in 1 chain\n$/)

  const tampered = [...lines]
  tampered[2] = (tampered[2] as string).replace('"127.0.0.1"', '"198.51.100.9"')
  writeFileSync(auditFile, `${tampered.join('\n')}\n`)
  const bad = verify(auditFile)
  t.equal(bad.status, 1)
  t.match(bad.stderr, /audit\.jsonl:4: prev is not the SHA-256 of line 3/)
})
