// Loaded first in each test process of `npm test` (run-tests.mjs passes it in
// NODE_OPTIONS through tap's --test-env, only with --disable-coverage).
//
// tap's runner always loads @tapjs/processinfo into its test processes. Its
// module hook records every module a test loads: it reads the file again,
// posts its source to the main thread and counts its line lengths, for the
// coverage report and `tap --changed`. On Node 20 that hook runs on a separate
// loader thread, and the recording costs 0.3 s of CPU in an empty test file and
// about 0.8 s in one that imports the Runtime (~700 modules), in each of ~320
// test processes. Without coverage nothing reads the list, so mark every file
// excluded from it: the hook then returns at once.
// The runner writes this variable into each test's environment over any
// --test-env value; a module in NODE_OPTIONS runs in the test process before
// processinfo's own --import starts the loader thread, so it is set here.
// processinfo passes NODE_OPTIONS on to every process a test starts
// (bin/bearward, the CLI, workers), so those skip the recording too.
process.env._TAPJS_PROCESSINFO_EXCLUDE_ = '/./'

// Even excluding every file, the hook is still there: with `module.register`
// (Node 20 and 22; processinfo uses in-thread hooks only from Node 24.13) every
// import of the test goes to the loader thread and back, to a hook that then
// returns at once. That round trip, and the thread, cost 0.3 to 1.1 CPU-s a
// test process (2026-11-29, Node 20: errors.test.js 1.15 s without the hook,
// 1.28 with it; runtime.test.js 1.66 and 2.78), more than the recording did.
// So when processinfo registers its loader, do not: nothing it would do reads
// a file once every file is excluded. The process's own record (the
// processinfo JSON that the runner reads) is written by processinfo's --import
// itself, not by the hook, and is unchanged. Any other module.register, and
// every one after processinfo's, goes through as before.
import module from 'node:module'

const register = module.register
if (typeof register === 'function') {
  module.register = function registerUnlessProcessinfo(specifier, ...rest) {
    if (String(specifier).includes('/@tapjs/processinfo/')) {
      module.register = register
      return
    }
    return register.call(this, specifier, ...rest)
  }
}
