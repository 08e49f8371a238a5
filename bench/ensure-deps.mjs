// `npm run bench` runs this first: the peers and the load generator are the
// bench's own dependencies (bench/package.json, its own lockfile), so that
// `npm ci` for the tests and the Docker build do not install them. Installs
// them with `npm ci --prefix bench` when they are missing or older than the
// lockfile.
import { execFileSync } from 'node:child_process'
import { existsSync, statSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const bench = fileURLToPath(new URL('./', import.meta.url))
const lock = `${bench}package-lock.json`
const installed = `${bench}node_modules/.package-lock.json`

if (!existsSync(installed) || statSync(installed).mtimeMs < statSync(lock).mtimeMs) {
  process.stderr.write('bench: installing its dependencies (npm ci --prefix bench)\n')
  execFileSync('npm', ['ci', '--prefix', bench, '--no-audit', '--no-fund'], { stdio: 'inherit' })
}
