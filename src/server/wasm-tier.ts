import { setFlagsFromString } from 'node:v8'

/**
 * WebAssembly compiled at its top tier at once, never in the background.
 *
 * undici parses HTTP/1.1 with llhttp, a WebAssembly module it compiles at the
 * first upstream exchange. By default V8 compiles it with its baseline
 * compiler (Liftoff) and optimizes it on a background thread afterwards; that
 * job runs for a second or two on a busy machine, and a process that exits
 * meanwhile waits for it after `process.exit` (V8 joins its worker threads):
 * a process stopped soon after its first proxied request lingered about
 * 1.8 s after "bearward stopped". Without Liftoff the module is compiled
 * optimized when it is created (a few milliseconds, once) and nothing is
 * left running. Set before anything compiles WebAssembly: V8 reads the flag
 * at each compile, so it must precede undici's first connection.
 * Test: test/e2e/shutdown-exit.test.ts.
 */
export function compileWasmAtTopTier(): void {
  setFlagsFromString('--no-liftoff')
}
