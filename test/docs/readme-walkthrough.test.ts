/**
 * README's "Try it with curl", run as a reader runs it: its upstream commands
 * in a directory of their own, bin/bearward on config/gateway.yaml (as
 * `npm start` runs it), then the walk-through's commands through a shell.
 * Only the ports change (the test cannot own 8080 and 3000). Each `curl -i`
 * answers the status its comment promises.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { startBin, tempConfig } from '../helpers/bin.js'
import { eventually, freePort } from '../helpers/http.js'

const README = readFileSync('README.md', 'utf8')

/** The `sh` blocks of the README's section `heading`, in order. */
function shBlocks(heading: string): string[] {
  const start = README.indexOf(`\n${heading}\n`)
  if (start === -1) throw new Error(`README has no section ${heading}`)
  const rest = README.slice(start + heading.length + 2)
  // `## ` or `### `: a lone `# ` starts a comment inside the sh blocks.
  const end = rest.search(/\n#{2,3} /)
  const section = end === -1 ? rest : rest.slice(0, end)
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? '')
}

/** Run `script` with sh, answering its stdout (and failing on a non-zero exit). */
function sh(script: string, cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`sh exited ${code}: ${err}`))))
  })
}

t.test("README's curl walk-through answers what its comments say", async (t) => {
  const blocks = shBlocks('### Try it with curl')
  const [upstreamBlock, walkthrough] = blocks.slice(0, 2)
  if (upstreamBlock === undefined || walkthrough === undefined) throw new Error('the section has an upstream block and a walk-through block')
  t.match(upstreamBlock, /http\.server 3000/, 'the upstream listens on 3000, where config/gateway.yaml sends /orders')

  const dir = await mkdtemp(join(tmpdir(), 'bearward-readme-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const upstreamPort = await freePort()
  // The block's last command serves in the foreground: its own process group, ended as a whole.
  const upstream = spawn('sh', ['-c', upstreamBlock.replaceAll('3000', String(upstreamPort))], { cwd: dir, detached: true, stdio: 'ignore' })
  t.teardown(() => {
    if (upstream.pid !== undefined) process.kill(-upstream.pid, 'SIGTERM')
  })
  t.ok(
    await eventually(async () => (await fetch(`http://127.0.0.1:${upstreamPort}/orders`).catch(() => null))?.status === 200, 15_000),
    'the upstream serves /orders',
  )

  const config = readFileSync('config/gateway.yaml', 'utf8')
    .replace(/^admin_listen: 127\.0\.0\.1:9090/m, 'admin_listen: 127.0.0.1:0')
    .replace('upstream: http://127.0.0.1:3000', `upstream: http://127.0.0.1:${upstreamPort}`)
  const cfg = await tempConfig(config)
  const bin = await startBin(cfg.file, { BEARWARD_LISTEN: '127.0.0.1:0' })
  t.teardown(async () => {
    await bin.stop('SIGKILL')
    await cfg.cleanup()
  })

  const promised = [...walkthrough.matchAll(/^curl -i .*# (\d{3})\b/gm)].map((m) => Number(m[1]))
  t.same(promised, [401, 200, 403, 401], 'the statuses the walk-through promises')
  const out = await sh(walkthrough.replaceAll('http://localhost:8080', bin.url), dir)
  // Not at line starts: a JSON body ends without a newline.
  const answers = out.split(/(?=HTTP\/1\.1 \d{3} )/).filter((a) => a.startsWith('HTTP/1.1'))
  t.same(
    answers.map((a) => Number(a.slice(9, 12))),
    promised,
    'each curl -i answers the status its comment says',
  )
  t.match(answers[0], /www-authenticate: Bearer realm="bearward"/i, 'the 401 challenges')
  t.match(answers[1], /\{"orders": \[\]\}/, "the 200 is the upstream's file")
  t.match(answers[2], /insufficient_scope/, 'the 403 is insufficient_scope')
  t.match(out, /"active":true/, 'introspection says the token is active')
  t.match(answers[3], /invalid_token/, 'the revoked token is refused as invalid_token')
})
