import t from 'tap'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { runCli, startBin, tempConfig } from '../helpers/bin.js'
import { memoryReducerOff } from '../../src/cli.js'
import { parseSecretHash, SecretVerifier } from '../../src/crypto/secret.js'
import { listen } from '../helpers/http.js'

t.test('--version and --help', async (t) => {
  // Independent commands run side by side: each is a process start, the bulk of this file's time.
  const helps = [[], ['--help'], ['start', '--help'], ['check-config', '--help'], ['hash-secret', '--help'], ['keys', '--help']]
  const [v, bad, ...answers] = await Promise.all([runCli(['--version']), runCli(['frobnicate']), ...helps.map(async (cmd) => ({ cmd, r: await runCli(cmd) }))])
  t.equal(v.code, 0)
  t.match(v.stdout, /^\d+\.\d+\.\d+\n$/)
  for (const { cmd, r } of answers) {
    t.equal(r.code, 0, `bearward ${cmd.join(' ')}`)
    t.match(r.stdout, /Usage: bearward/)
  }
  t.equal(bad.code, 1)
  t.match(bad.stderr, /unknown command frobnicate/)
})

t.test('hash-secret prints a verifiable hash alone on its last line', async (t) => {
  const [r, g, empty] = await Promise.all([runCli(['hash-secret'], 's3cret-value\n'), runCli(['hash-secret', '--generate']), runCli(['hash-secret'], '')])
  t.equal(r.code, 0)
  const last = r.stdout.trimEnd().split('\n').at(-1) ?? ''
  t.ok(parseSecretHash(last), 'the last line is a hash in our format')
  t.equal(await new SecretVerifier().verify('s3cret-value', last), true, 'the trailing newline is not part of the secret')
  t.equal(await new SecretVerifier().verify('s3cret-value\n', last), false)

  t.equal(g.code, 0)
  const secret = /client_secret: (\S+)/.exec(g.stdout)?.[1] ?? ''
  t.equal(secret.length, 43, 'a 256-bit secret, base64url')
  const hash = g.stdout.trimEnd().split('\n').at(-1) ?? ''
  t.equal(await new SecretVerifier().verify(secret, hash), true)

  t.equal(empty.code, 1)
})

t.test('keys generate prints a private JWK with kid, alg and use', async (t) => {
  const algs = ['ES256', 'RS256', 'PS256', 'EdDSA']
  const [dflt, bad, ...generated] = await Promise.all([
    runCli(['keys', 'generate']),
    runCli(['keys', 'generate', '--alg', 'HS256']),
    ...algs.map(async (alg) => ({ alg, r: await runCli(['keys', 'generate', '--alg', alg, '--kid', `k-${alg}`]) })),
  ])
  for (const { alg, r } of generated) {
    t.equal(r.code, 0, alg)
    const jwk = JSON.parse(r.stdout) as Record<string, string>
    t.equal(jwk.alg, alg)
    t.equal(jwk.kid, `k-${alg}`)
    t.equal(jwk.use, 'sig')
    t.type(jwk.d, 'string', 'private member present')
  }
  t.equal((JSON.parse(dflt.stdout) as { alg: string }).alg, 'RS256', 'RS256 by default: what OpenID Connect clients expect')
  t.equal(bad.code, 1)
  t.match(bad.stderr, /--alg must be one of/)
})

t.test('check-config: ok for a good file; positioned errors and exit 1 for a broken one', async (t) => {
  const good = await tempConfig(
    'listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nroutes:\n  - name: docs\n    match: { path: /docs }\n    upstream: http://127.0.0.1:3001\n    public: true\n',
  )
  const bad = await tempConfig(
    'listen: 127.0.0.1:0\nlistn: 1\nroutes:\n  - name: docs\n    match: { path: /docs }\n    upstream: not a url\n    public: true\n',
  )
  t.teardown(async () => {
    await good.cleanup()
    await bad.cleanup()
  })
  const ok = await runCli(['check-config', '-c', good.file])
  t.equal(ok.code, 0, ok.stderr)
  t.match(ok.stdout, /^ok$/m)
  const r = await runCli(['check-config', '-c', bad.file])
  t.equal(r.code, 1)
  t.match(r.stderr, new RegExp(`${bad.file.replace(/[.]/g, '\\.')}:2:1: .*listn`), 'unknown key with its position')
  t.match(r.stderr, /did you mean `?listen`?/)
  t.match(r.stderr, new RegExp(`${bad.file.replace(/[.]/g, '\\.')}:6:\\d+: routes\\[0\\]\\.upstream`), 'bad URL with its position')
  const bin = await runCli(['start', '-c', bad.file])
  t.equal(bin.code, 1, 'start refuses an invalid config')
  t.match(bin.stderr, /invalid config/)
})

t.test('the image with no config mounted refuses to serve the demo secrets to the network', async (t) => {
  // What the Docker image runs: the example config with BEARWARD_LISTEN=0.0.0.0:… (Dockerfile's ENV).
  const dockerfile = await readFile('Dockerfile', 'utf8')
  t.match(dockerfile, /BEARWARD_LISTEN=0\.0\.0\.0:8080/, 'the image listens on every interface')
  const instructions = dockerfile
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
  t.notMatch(instructions, /BEARWARD_ALLOW_DEMO/, 'and does not allow the demo itself')
  const refused = await runCli(['start', '-c', 'config/gateway.yaml'], undefined, { BEARWARD_LISTEN: '0.0.0.0:0' })
  t.equal(refused.code, 1, 'start refuses')
  t.match(refused.stderr, /listen: .*public DEMO secret.*BEARWARD_ALLOW_DEMO=1/)
  t.notMatch(refused.stderr, /demo-secret|demo-password/, 'the error names who uses a demo secret, not the secret')
  const check = await runCli(['check-config', '-c', 'config/gateway.yaml'], undefined, { BEARWARD_LISTEN: '0.0.0.0:0' })
  t.equal(check.code, 1, 'check-config says the same')
  const allowed = await runCli(['check-config', '-c', 'config/gateway.yaml'], undefined, { BEARWARD_LISTEN: '0.0.0.0:0', BEARWARD_ALLOW_DEMO: '1' })
  t.equal(allowed.code, 0, `BEARWARD_ALLOW_DEMO=1 lets it load: ${allowed.stderr}`)
})

t.test('start exits non-zero with a clear message when the port is taken', async (t) => {
  const blocker = createServer()
  const { port } = await listen(blocker)
  const cfg = await tempConfig(`listen: 127.0.0.1:${port}\nadmin_listen: 127.0.0.1:0\nroutes: []\n`)
  t.teardown(async () => {
    blocker.close()
    await cfg.cleanup()
  })
  const r = await runCli(['start', '-c', cfg.file])
  t.equal(r.code, 1)
  t.match(r.stderr, /already in use/)
})

t.test("the launchers turn off V8's memory reducer; a bypassed launcher is warned about", async (t) => {
  const cfg = await tempConfig('listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\nroutes: []\n')
  t.teardown(cfg.cleanup)
  const warned = (lines: string[]): boolean => lines.some((l) => l.includes('started without --no-memory-reducer'))

  const installed = await startBin(cfg.file, {}, 15000, 'shebang')
  await installed.waitForLog((e) => e.msg === 'bearward listening on ' + String(e.listen))
  t.equal(warned(installed.lines), false, 'bin/bearward run as a program passes the flag itself')
  t.equal(await installed.stop(), 0)

  const bypassed = await startBin(cfg.file)
  const line = await bypassed.waitForLog((e) => typeof e.msg === 'string' && e.msg.includes('--no-memory-reducer'))
  t.equal(line.level, 40, 'a warning')
  t.equal(await bypassed.stop(), 0)

  const pkg = JSON.parse(await readFile('package.json', 'utf8')) as { scripts: Record<string, string> }
  t.match(pkg.scripts.start, /^node --no-memory-reducer --max-semi-space-size=8 --heap-growing-percent=100 bin\/bearward start/, 'npm start passes it')
  t.match(
    await readFile('Dockerfile', 'utf8'),
    /ENTRYPOINT \["node", "--no-memory-reducer", "--max-semi-space-size=8", "--heap-growing-percent=100", "bin\/bearward"\]/,
    'the image passes it',
  )
})

t.test('memoryReducerOff reads the flag as V8 does: the last one wins, _ and - alike', async (t) => {
  t.equal(memoryReducerOff([]), false)
  t.equal(memoryReducerOff(['--no-memory-reducer']), true)
  t.equal(memoryReducerOff(['--no-memory_reducer']), true)
  t.equal(memoryReducerOff(['--memory-reducer=false']), true)
  t.equal(memoryReducerOff(['--no-memory-reducer', '--memory-reducer']), false)
  t.equal(memoryReducerOff(['--max-old-space-size=100']), false)
})
