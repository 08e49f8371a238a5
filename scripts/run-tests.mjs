// `npm test`: run tap as it is configured in package.json, pass its output
// through unchanged, and when something failed, end with the list of failed
// assertions (their subtest path and the first lines of their diagnostics).
// CI keeps only the tail of a run (with `npm run test:coverage`, the coverage
// table): without this list a red run says "fail: 1" and not which of 24,000
// assertions it was.
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath, pathToFileURL } from 'node:url'

const DIAGNOSTIC_LINES = 40

const tapPackage = createRequire(import.meta.url).resolve('tap/package.json')
const tapBin = join(dirname(tapPackage), JSON.parse(readFileSync(tapPackage, 'utf8')).bin.tap)

// A fresh install's tap is built with @tapjs/typescript, which package.json
// turns off. tap rebuilds itself when the plugins differ, but the run that
// does so still starts every test file with the old build's loaders: ts-node
// in each of ~300 processes, half a second of CPU apiece (a minute and more
// on two cores). So build first when the plugins differ.
try {
  const { TapConfig } = await import('@tapjs/config')
  const { signature } = await import('@tapjs/test')
  if ((await TapConfig.load()).pluginSignature !== signature) {
    process.stdout.write('# rebuilding tap for the plugins package.json names\n')
    spawnSync(process.execPath, [tapBin, 'build'], { stdio: 'inherit' })
  }
} catch (err) {
  // tap still rebuilds itself; only that first run is slower.
  process.stderr.write(`# could not compare tap's plugins with package.json: ${err}\n`)
}

// Without coverage, each test process skips processinfo's list of the modules
// it loaded, which only coverage reads (see tap-no-file-record.mjs).
const args = process.argv.slice(2)
if (args.includes('--disable-coverage')) {
  const preload = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), 'tap-no-file-record.mjs'))
  const nodeOptions = [process.env.NODE_OPTIONS, `--import=${preload}`].filter((o) => o !== undefined && o !== '').join(' ')
  args.push(`--test-env=NODE_OPTIONS=${nodeOptions}`)
}

const tap = spawn(process.execPath, [tapBin, ...args], {
  stdio: ['inherit', 'pipe', 'inherit'],
})

/** Subtest names by depth, from `# Subtest: name` lines (four spaces a level). */
const path = []
const failures = []
/** The failure whose YAML diagnostics are being read, if any. */
let reading = null

function depthOf(line) {
  return Math.floor((line.length - line.trimStart().length) / 4)
}

createInterface({ input: tap.stdout }).on('line', (line) => {
  process.stdout.write(`${line}\n`)
  const text = line.trim()
  if (reading) {
    if (text === '...') reading = null
    else if (text !== '---' && reading.diagnostics.length < DIAGNOSTIC_LINES) reading.diagnostics.push(line.slice(reading.indent))
    return
  }
  const depth = depthOf(line)
  const subtest = /^# Subtest: (.*)$/.exec(text)
  if (subtest) {
    path.length = depth
    path[depth] = subtest[1]
    return
  }
  const notOk = /^not ok \d+ - (.*?)(?: # time=.*)?$/.exec(text)
  if (!notOk) return
  // A failed subtest is reported again by every parent; keep the innermost.
  const where = [...path.slice(0, depth), notOk[1]].join(' > ')
  if (failures.some((f) => f.where.startsWith(`${where} > `) || f.where === where)) return
  reading = { where, indent: line.length - line.trimStart().length + 2, diagnostics: [] }
  failures.push(reading)
})

tap.on('close', (code, signal) => {
  if (failures.length > 0) {
    process.stdout.write(`\n# ${failures.length} failed:\n`)
    for (const f of failures) {
      process.stdout.write(`\nnot ok: ${f.where}\n`)
      for (const d of f.diagnostics) process.stdout.write(`    ${d}\n`)
    }
  }
  process.exitCode = code ?? (signal ? 1 : 0)
})
