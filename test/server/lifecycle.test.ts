import t from 'tap'
import { EventEmitter } from 'node:events'
import { handleSignals, ignoreHangup, shutdownBoundMs, type ProcessHandle } from '../../src/server/lifecycle.js'

/** A stand-in for `process`: signals are emitted by the test, exits and stderr lines are recorded. */
class FakeProcess extends EventEmitter implements ProcessHandle {
  readonly exits: number[] = []
  readonly errors: string[] = []
  readonly stderr = { write: (text: string): boolean => this.errors.push(text) > 0 }
  readonly #waiting: Array<(code: number) => void> = []
  exit(code: number): void {
    this.exits.push(code)
    for (const resolve of this.#waiting.splice(0)) resolve(code)
  }
  /** The next exit's code. */
  exited(): Promise<number> {
    return new Promise((resolve) => this.#waiting.push(resolve))
  }
}

t.test('SIGTERM closes once and exits with its code; a second signal during shutdown changes nothing', async (t) => {
  const proc = new FakeProcess()
  const reasons: string[] = []
  let finish: (code: number) => void = () => undefined
  handleSignals(
    {
      name: 'bearward',
      close: (reason) => {
        reasons.push(reason)
        return new Promise((resolve) => {
          finish = resolve
        })
      },
      backstopMs: () => 60_000,
      reload: null,
    },
    proc,
  )
  const exited = proc.exited()
  proc.emit('SIGTERM')
  proc.emit('SIGINT')
  proc.emit('SIGTERM')
  t.same(reasons, ['SIGTERM'], 'one shutdown, started by the first signal')
  t.same(proc.exits, [], 'nothing exits while the close runs')
  finish(0)
  t.equal(await exited, 0)
  t.same(proc.exits, [0], 'exited once')
  t.same(proc.errors, [])
})

t.test('the backstop exits 1 when a close hangs', async (t) => {
  const proc = new FakeProcess()
  handleSignals({ name: 'bearward worker 2', close: () => new Promise<number>(() => undefined), backstopMs: () => 20, reload: null }, proc)
  const exited = proc.exited()
  // Nothing else keeps this test's process up: the backstop itself holds it open while
  // the shutdown is unfinished (a process must not drift out of a pending close()).
  proc.emit('SIGINT')
  t.equal(await exited, 1)
  t.same(proc.errors, ['bearward worker 2: shutdown did not finish within 20 ms; exiting\n'])
})

t.test('a close that fails exits 1 and says why on stderr', async (t) => {
  const proc = new FakeProcess()
  handleSignals({ name: 'bearward', close: () => Promise.reject(new Error('store would not close')), backstopMs: () => 60_000, reload: null }, proc)
  const exited = proc.exited()
  proc.emit('SIGTERM')
  t.equal(await exited, 1)
  t.same(proc.errors, ['bearward: error during shutdown: store would not close\n'])
})

t.test('stop() starts the same shutdown as a signal, and a later signal does not start another', async (t) => {
  const proc = new FakeProcess()
  const reasons: string[] = []
  const stop = handleSignals(
    {
      name: 'bearward worker 1',
      close: async (reason) => {
        reasons.push(reason)
        return 0
      },
      backstopMs: () => 60_000,
      reload: null,
    },
    proc,
  )
  const exited = proc.exited()
  stop('asked by the primary')
  proc.emit('SIGTERM')
  t.equal(await exited, 0)
  t.same(reasons, ['asked by the primary'])
  t.same(proc.exits, [0])
})

t.test('SIGHUP reloads where there is a reload; otherwise the lifecycle leaves it alone', async (t) => {
  const proc = new FakeProcess()
  let reloads = 0
  handleSignals({ name: 'bearward', close: async () => 0, backstopMs: () => 60_000, reload: () => reloads++ }, proc)
  proc.emit('SIGHUP')
  proc.emit('SIGHUP')
  t.equal(reloads, 2)
  t.same(proc.exits, [], 'a reload is no shutdown')

  const worker = new FakeProcess()
  handleSignals({ name: 'bearward worker 1', close: async () => 0, backstopMs: () => 60_000, reload: null }, worker)
  t.equal(worker.listenerCount('SIGHUP'), 0)
  ignoreHangup(worker)
  t.equal(worker.listenerCount('SIGHUP'), 1, 'a worker listens, so SIGHUP does not end it')
})

t.test('a shutdown is bounded by shutdown_timeout plus 15 s for closing what the process holds', async (t) => {
  t.equal(shutdownBoundMs(10_000), 25_000)
})
