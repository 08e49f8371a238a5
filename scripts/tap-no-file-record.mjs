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
