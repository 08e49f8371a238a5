// `npm test`'s build of the suite: src/ and test/ compiled once by tsc into
// dist-test/ (typechecked on the way, as `npm run typecheck` does), so tap
// runs JavaScript. Running each of the ~200 test files through a TypeScript
// loader cost 0.35 to 0.85 s of start-up a process, a minute and more of the
// suite's wall time on two cores; and tsc's source maps are the ones dist/
// has, so coverage maps back to src/ the same way in the test process and in
// the bin/bearward it starts.
//
// A few modules read files next to themselves (src/config/contract.ts reads
// ../../config/gateway.schema.json, src/cli.ts ../package.json): dist-test/
// links those to the repository's own, so the compiled tree finds what the
// source tree does.
import { spawnSync } from 'node:child_process'
import { mkdirSync, rmSync, symlinkSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'

const OUT = resolve('dist-test')
const LINKED = ['config', 'package.json']

rmSync(OUT, { recursive: true, force: true })
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
const built = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.test.json'], { stdio: 'inherit' })
if (built.status !== 0) process.exit(built.status ?? 1)
for (const name of LINKED) {
  const link = join(OUT, name)
  mkdirSync(dirname(link), { recursive: true })
  symlinkSync(relative(dirname(link), resolve(name)), link)
}
