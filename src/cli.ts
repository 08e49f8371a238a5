import { parseArgs } from 'node:util'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { dirname, join, resolve } from 'node:path'
import type { App } from './app.js'
import cluster from 'node:cluster'
import { ConfigError, formatProblem } from './errors.js'
import { generateClientSecret, hashSecret } from './crypto/secret.js'
import type { SigningAlg } from './keys/keyset.js'
import { handleSignals, shutdownBoundMs } from './server/lifecycle.js'
import { compileWasmAtTopTier } from './server/wasm-tier.js'

const DEFAULT_CONFIG = 'config/gateway.yaml'

function version(): string {
  const pkg = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'package.json'), 'utf8')) as { version: string }
  return pkg.version
}

const HELP: Record<string, string> = {
  main: `bearward: OAuth 2.0 authorization server and bearer-token gateway

Usage: bearward <command> [options]

Commands:
  start          run the server
  check-config   validate a config file
  hash-secret    hash a client secret or password (or generate a new client secret)
  keys generate  print a new private signing key (JWK)
  audit verify   check an audit trail file's hash chains
  admin          the admin API: clients, grants, tokens (bearward admin --help)

Options:
  -h, --help     help for a command: bearward <command> --help
  -v, --version  print the version
`,
  start: `Usage: bearward start [-c FILE]

Runs the authorization server and the gateway described by FILE.
  -c, --config FILE   config file (default: $BEARWARD_CONFIG or ${DEFAULT_CONFIG})

Reloads the config when the file changes and on SIGHUP; a bad file is refused and the
running config keeps serving. SIGTERM/SIGINT: stop accepting, finish in-flight requests, exit 0.
With \`workers\` > 1 this process is the primary: it forks the worker processes, serves
admin_listen for all of them, reloads them, restarts any that dies, and drains them all on
SIGTERM (docs/many-instances.md).
`,
  'check-config': `Usage: bearward check-config [-c FILE]

Validates FILE. Prints "ok" (and warnings), or every error as file:line:col: key: reason
and exits 1.
  -c, --config FILE   config file (default: $BEARWARD_CONFIG or ${DEFAULT_CONFIG})
`,
  'hash-secret': `Usage: bearward hash-secret [--generate]
       printf '%s' SECRET | bearward hash-secret

Reads a secret or password from stdin (a single trailing newline is removed) and prints
its hash, alone on the last line, for secret_hash or password_hash.
With --generate (or nothing on stdin from a terminal), creates a new random 256-bit client
secret and prints it together with its hash.
`,
  keys: `Usage: bearward keys generate [--alg RS256|PS256|ES256|ES384|EdDSA] [--kid KID]

Prints a new private JWK (with kid, alg and use) for authorization_server.keys.
Keep it secret: store it in a file readable only by bearward.
`,
  audit: `Usage: bearward audit verify FILE

Checks the hash chains of an audit trail file (audit.destination, docs/operating.md).
Exit 0 and a summary when every chain holds; exit 1 and the first broken line
(its number and what is wrong with it) otherwise. Lines that are not audit lines
(log lines, when the trail went to stdout) are skipped and counted.
`,
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) chunks.push(chunk)
  return Buffer.concat(chunks).toString('utf8')
}

function configPath(value: string | undefined): string {
  return resolve(value ?? process.env.BEARWARD_CONFIG ?? DEFAULT_CONFIG)
}

/**
 * Whether node runs with V8's memory reducer off. The reducer's full GC,
 * run once a process has been idle for a few seconds, leaves Node 20's
 * process.nextTick (several calls per proxied request) about ten times
 * slower for the rest of the process; docs/performance.md has the
 * measurement. V8 reads the flag only at start-up, so the launchers pass it
 * (bin/bearward's shebang, npm start, the Docker image).
 */
export function memoryReducerOff(execArgv: readonly string[]): boolean {
  let off = false
  for (const arg of execArgv) {
    const flag = arg.replaceAll('_', '-')
    if (flag === '--no-memory-reducer' || flag === '--memory-reducer=false') off = true
    else if (flag === '--memory-reducer' || flag === '--memory-reducer=true') off = false
  }
  return off
}

async function cmdStart(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } } })
  if (values.help) return print(HELP.start)
  const file = configPath(values.config)
  // Before undici compiles llhttp: no background compile job to wait for at exit.
  compileWasmAtTopTier()
  // The server's modules load only here, and each other command loads only its own (the config
  // loader for check-config, jose for keygen, the admin client for admin): --version, hash-secret
  // and admin answer without paying for the config loader's yaml, ajv and jose (docs/performance.md).
  // `workers` > 1: this process is the primary, or one of the workers it forked (docs/many-instances.md).
  if (cluster.isWorker) {
    const { runWorker } = await import('./workers/worker.js')
    return runWorker(file)
  }
  const [{ App }, { runPrimary }, { loadConfigSnapshot }] = await Promise.all([import('./app.js'), import('./workers/run.js'), import('./config/load.js')])
  const reducerWarning = (log: App['log']): void => {
    if (!memoryReducerOff(process.execArgv)) {
      log.warn(
        'node was started without --no-memory-reducer: once the process has been idle for a few seconds, every request costs more CPU for the rest of its life (docs/performance.md); run bin/bearward itself, npm start, or node --no-memory-reducer bin/bearward',
      )
    }
  }
  let app: App
  try {
    const snapshot = await loadConfigSnapshot(file)
    if (snapshot.config.workers > 1) return await runPrimary(file, snapshot, (primary) => reducerWarning(primary.log))
    app = await App.start({ configPath: file })
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`bearward: invalid config, not starting:\n${err.problems.map(formatProblem).join('\n')}\n`)
    } else {
      process.stderr.write(`bearward: ${(err as Error).message}\n`)
    }
    return 1
  }
  reducerWarning(app.log)
  handleSignals({
    name: 'bearward',
    close: async (signal) => {
      app.log.info({ signal }, 'shutting down')
      await app.close()
      return 0
    },
    backstopMs: () => shutdownBoundMs(app.runtime.config.shutdownTimeoutMs),
    reload: () => void app.reload(),
  })
  return new Promise<number>(() => {
    // runs until a signal
  })
}

async function cmdCheckConfig(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } } })
  if (values.help) return print(HELP['check-config'])
  const { checkConfig } = await import('./config/load.js')
  const result = await checkConfig(configPath(values.config), process.env)
  for (const w of result.warnings) process.stdout.write(`warning: ${formatProblem(w)}\n`)
  if (result.problems.length > 0) {
    for (const p of result.problems) process.stderr.write(`${formatProblem(p)}\n`)
    process.stderr.write(`${result.problems.length} error${result.problems.length === 1 ? '' : 's'}\n`)
    return 1
  }
  process.stdout.write('ok\n')
  return 0
}

async function cmdHashSecret(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { generate: { type: 'boolean', short: 'g' }, help: { type: 'boolean', short: 'h' } } })
  if (values.help) return print(HELP['hash-secret'])
  let secret: string
  if (values.generate || process.stdin.isTTY) {
    secret = generateClientSecret()
    process.stdout.write(`client_secret: ${secret}\n`)
    process.stdout.write('secret_hash (paste into the config; give the secret to the client):\n')
  } else {
    secret = (await readStdin()).replace(/\r?\n$/, '')
    if (secret.length === 0) {
      process.stderr.write('bearward: nothing on stdin; pipe a secret in, or use --generate\n')
      return 1
    }
  }
  process.stdout.write(`${await hashSecret(secret)}\n`)
  return 0
}

async function cmdKeys(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { alg: { type: 'string' }, kid: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  })
  if (values.help || positionals[0] !== 'generate') {
    process.stdout.write(HELP.keys ?? '')
    return values.help ? 0 : 1
  }
  const { generatePrivateJwk, SUPPORTED_ALGS } = await import('./keys/keyset.js')
  const alg = (values.alg ?? 'RS256') as SigningAlg
  if (!(SUPPORTED_ALGS as readonly string[]).includes(alg)) {
    process.stderr.write(`bearward: --alg must be one of ${SUPPORTED_ALGS.join(', ')}\n`)
    return 1
  }
  const jwk = await generatePrivateJwk(alg, values.kid)
  process.stdout.write(`${JSON.stringify(jwk, null, 2)}\n`)
  return 0
}

async function cmdAudit(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { help: { type: 'boolean', short: 'h' } } })
  const [sub, file, ...extra] = positionals
  if (values.help || sub !== 'verify' || file === undefined || extra.length > 0) {
    process.stdout.write(HELP.audit ?? '')
    return values.help ? 0 : 1
  }
  const { verifyAuditText } = await import('./audit/chain.js')
  const result = verifyAuditText(readFileSync(file, 'utf8'))
  if (!result.ok) {
    process.stderr.write(`${file}:${result.line}: ${result.reason}\n`)
    return 1
  }
  const skipped = result.skipped > 0 ? `, ${result.skipped} other line${result.skipped === 1 ? '' : 's'} skipped` : ''
  process.stdout.write(`ok: ${result.events} event${result.events === 1 ? '' : 's'} in ${result.chains} chain${result.chains === 1 ? '' : 's'}${skipped}\n`)
  return 0
}

async function cmdAdmin(args: string[]): Promise<number> {
  const { adminCli } = await import('./admin/cli.js')
  return adminCli(
    args,
    process.env,
    (text) => process.stdout.write(text),
    (text) => process.stderr.write(text),
  )
}

function print(text: string | undefined): number {
  process.stdout.write(text ?? '')
  return 0
}

/** Entry point of bin/bearward. Resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv
  try {
    switch (command) {
      case 'start':
        return await cmdStart(rest)
      case 'check-config':
        return await cmdCheckConfig(rest)
      case 'hash-secret':
        return await cmdHashSecret(rest)
      case 'keys':
        return await cmdKeys(rest)
      case 'audit':
        return await cmdAudit(rest)
      case 'admin':
        return await cmdAdmin(rest)
      case '-v':
      case '--version':
        return print(`${version()}\n`)
      case undefined:
      case '-h':
      case '--help':
      case 'help':
        return print(HELP.main)
      default:
        process.stderr.write(`bearward: unknown command ${command}\n\n${HELP.main}`)
        return 1
    }
  } catch (err) {
    // parseArgs errors (unknown option) and the like: say it plainly.
    process.stderr.write(`bearward: ${(err as Error).message}\n`)
    return 1
  }
}
