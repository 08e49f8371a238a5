/**
 * Running the MCP conformance package's server scenarios
 * (`@modelcontextprotocol/conformance`, its CLI as its users run it:
 * `conformance server --url … -o dir`) and reading their results, and the
 * relay that lets the CLI reach a protected route.
 *
 * The CLI has no option for request headers (its client is the SDK 1.x
 * Streamable HTTP transport with no requestInit, and its raw probes use
 * undici with fixed headers), so it cannot present a token. A relay in front
 * of the gateway adds `Authorization: Bearer …` and changes nothing else: the
 * request line, every other header (Host included, which the DNS-rebinding
 * scenario forges) and both bodies pass byte for byte, streamed both ways.
 * The direct run goes through the same relay without a token, so the only
 * difference between the two runs is bearward.
 */
import { spawn } from 'node:child_process'
import { readdir, readFile } from 'node:fs/promises'
import { createServer, request, type Server } from 'node:http'
import { join, resolve } from 'node:path'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import type { Test } from 'tap'
import { childEnv, startBin, tempConfig, type RunningBin } from './bin.js'
import { demoHashes } from './as-config.js'
import { closeServer, freePort, listen } from './http.js'

export const CONFORMANCE_CLI = resolve('node_modules/@modelcontextprotocol/conformance/dist/index.js')
/**
 * The prerelease (0.2.0-alpha.12, installed under the alias
 * `@modelcontextprotocol/conformance-next`): the only one with server
 * scenarios for 2026-07-28.
 */
export const CONFORMANCE_NEXT_CLI = resolve('node_modules/@modelcontextprotocol/conformance-next/dist/index.js')

/** One check of a scenario's checks.json. */
export interface ConformanceCheck {
  readonly id: string
  readonly status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED'
  readonly errorMessage?: string
}

/**
 * The CLI imports `globSync` from node:fs (Node 22+) for its tier-check
 * command, which the server command never calls (both the release and the
 * prerelease); on Node 20 the import alone fails. This loader gives the CLI's module an fs with a globSync that throws,
 * and nothing else changes. Unused on Node 22 and later.
 */
const FS_SHIM =
  'data:text/javascript,' +
  encodeURIComponent(
    'import fs from "node:fs"; export * from "node:fs"; export default fs; export function globSync() { throw new Error("fs.globSync needs Node 22") }',
  )
const HOOKS =
  'data:text/javascript,' +
  encodeURIComponent(
    `export async function resolve(specifier, context, next) {
      if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL && (context.parentURL.includes('/@modelcontextprotocol/conformance/dist/') || context.parentURL.includes('/@modelcontextprotocol/conformance-next/dist/'))) return { url: ${JSON.stringify(FS_SHIM)}, shortCircuit: true }
      return next(specifier, context)
    }`,
  )
const REGISTER = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'; register(${JSON.stringify(HOOKS)})`)}`

function nodeArgs(): string[] {
  const major = Number(process.versions.node.split('.')[0])
  return major >= 22 ? [] : ['--import', REGISTER]
}

/** `conformance list --server`: the server scenarios this version has, with the spec versions each applies to. */
export async function listServerScenarios(cli = CONFORMANCE_CLI): Promise<Map<string, string[]>> {
  const out = await runCli(cli, ['list', '--server'])
  const found = new Map<string, string[]>()
  for (const m of out.stdout.matchAll(/^\s*- (\S+) \[([^\]]*)\]/gm)) found.set(m[1] as string, (m[2] as string).split(','))
  return found
}

async function runCli(cli: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [...nodeArgs(), cli, ...args], { env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (c: Buffer) => {
    stdout += c.toString('utf8')
  })
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString('utf8')
  })
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve))
  return { code, stdout, stderr }
}

/** Which CLI runs, and at which protocol revision (`--spec-version`; the CLI's own choice when absent). */
export interface ConformanceRunOptions {
  readonly cli?: string
  readonly specVersion?: string
}

/**
 * Run the server scenarios (all of them, pending ones included, or the one named) against `url`
 * and return each scenario's checks, read from the checks.json files the CLI
 * writes under `outDir`.
 */
export async function runServerScenarios(
  url: string,
  outDir: string,
  scenario?: string,
  options: ConformanceRunOptions = {},
): Promise<{ code: number | null; stdout: string; stderr: string; results: Map<string, ConformanceCheck[]> }> {
  const version = options.specVersion === undefined ? [] : ['--spec-version', options.specVersion]
  const run = await runCli(options.cli ?? CONFORMANCE_CLI, [
    'server',
    '--url',
    url,
    '-o',
    outDir,
    ...(scenario === undefined ? ['--suite', 'all'] : ['--scenario', scenario]),
    ...version,
  ])
  const results = new Map<string, ConformanceCheck[]>()
  for (const dir of await readdir(outDir)) {
    // server-<scenario>-<timestamp>
    const name = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z?$/.exec(dir)?.[1] ?? dir
    const checks = JSON.parse(await readFile(join(outDir, dir, 'checks.json'), 'utf8')) as ConformanceCheck[]
    results.set(name, checks)
  }
  return { ...run, results }
}

export interface Relay {
  readonly url: string
  /** The token added to every relayed request, when set. */
  token: string | null
  /** Requests relayed, in order (method and path). */
  readonly relayed: Array<{ method: string; url: string }>
  close(): Promise<void>
}

/**
 * A pass-through HTTP relay to `target` (base URL) that adds
 * `Authorization: Bearer token` once `token` is set. In front of the gateway
 * it is the gateway's public address (`public_url`), as a load balancer
 * would be, so the origin a client sees is the one bearward calls its own.
 */
export async function startRelay(target: string): Promise<Relay> {
  const to = new URL(target)
  const relayed: Array<{ method: string; url: string }> = []
  let token: string | null = null
  const server: Server = createServer((req, res) => {
    relayed.push({ method: req.method ?? '', url: req.url ?? '' })
    const headers = { ...req.headers }
    if (token !== null) headers.authorization = `Bearer ${token}`
    const out = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.statusMessage, up.rawHeaders)
      res.flushHeaders()
      up.pipe(res)
    })
    out.on('error', () => res.destroy())
    res.on('close', () => out.destroy())
    req.pipe(out)
  })
  const { url } = await listen(server)
  return {
    url,
    relayed,
    get token() {
      return token
    },
    set token(value: string | null) {
      token = value
    },
    async close() {
      await closeServer(server)
    },
  }
}

/** What a conformance test compares: a relay to the reference server, and one to bearward's route in front of it. */
export interface ConformanceRig {
  /** Where the CLI writes each run's results. */
  dir: string
  /** bearward's own address, and the public_url clients are given (the gateway relay). */
  base: string
  publicUrl: string
  direct: Relay
  gateway: Relay
  bin: RunningBin
}

/**
 * bin/bearward with an `mcp` route in front of `everything`, a relay to each
 * (the gateway's relay is bearward's public_url, so both runs pass one), and
 * a work directory; all of it closed at `t`'s teardown.
 */
export async function startConformanceRig(t: Test, everything: { url: string; close(): Promise<void> }, prefix: string): Promise<ConformanceRig> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  // Both runs go through a relay; the gateway's relay is its public address.
  const direct = await startRelay(everything.url)
  const gateway = await startRelay(base)
  const publicUrl = gateway.url
  const { secretHash } = await demoHashes()
  const config = await tempConfig(`
listen: 127.0.0.1:${port}
admin_listen: 127.0.0.1:0
public_url: ${publicUrl}
authorization_server:
  scopes: { "mcp:tools": Use the test tools, "tests:admin": Run the error tool }
  clients:
    - client_id: conformance
      type: confidential
      secret_hash: "${secretHash}"
      grant_types: [client_credentials]
      scopes: ["mcp:tools", "tests:admin"]
routes:
  - name: mcp
    match: { path: /mcp }
    upstream: ${everything.url}
    scopes: { "*": ["mcp:tools"] }
    mcp: { tools: { test_error_handling: ["tests:admin"] } }
`)
  const cleanup = async (): Promise<void> => {
    await direct.close()
    await gateway.close()
    await everything.close()
    await config.cleanup()
    await rm(dir, { recursive: true, force: true })
  }
  let bin: RunningBin
  try {
    bin = await startBin(config.file, {}, 60_000)
  } catch (err) {
    await cleanup()
    throw err
  }
  t.teardown(async () => {
    await bin.stop()
    await cleanup()
  })
  return { dir, base, publicUrl, direct, gateway, bin }
}
