// `npm start` on a fresh clone: build dist/ when it is missing or older than src/.
import { existsSync, statSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { execFileSync } from 'node:child_process'

function newest(dir) {
  let t = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name)
    t = Math.max(t, entry.isDirectory() ? newest(p) : statSync(p).mtimeMs)
  }
  return t
}

const built = existsSync('dist/cli.js') ? newest('dist') : 0
if (built === 0 || newest('src') > built) {
  process.stderr.write('building bearward (tsc)...\n')
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' })
}
