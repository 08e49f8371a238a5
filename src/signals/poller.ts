/**
 * Poll delivery (RFC 8936): every `poll.interval` one instance (the holder
 * of a lease in the store, renewed each poll, expiring when that instance
 * stops) POSTs to the transmitter's poll URL
 * `{ack, setErrs, maxEvents, returnImmediately: true}`, hands each SET of the
 * answer's `sets` to the receiver, and acknowledges the handled ones (or
 * reports them in `setErrs`) with the next poll. `moreAvailable` polls again
 * at once, a bounded number of times.
 *
 * A transmitter that is down: each failure doubles the wait (from the
 * interval up to MAX_BACKOFF_MS), one warning when an outage starts and one
 * line when it ends; nothing else waits for a poll.
 */
import { Agent, request } from 'undici'
import { randomUUID } from 'node:crypto'
import type { SignalTransmitterConfig } from '../config/validated-config.js'
import { type Logger, redactUrl } from '../log.js'
import type { Metrics } from '../metrics.js'
import type { SignalStore } from '../store/types.js'
import type { SignalReceiver } from './receiver.js'
import { SetRefused } from './set-error.js'

/** The longest wait between polls of a transmitter that keeps failing. */
const MAX_BACKOFF_MS = 10 * 60_000
/** An answer larger than this is not a batch of SETs we asked for (maxEvents is at most 1000). */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024
/** Polls in a row while the transmitter says `moreAvailable`. */
const MAX_DRAIN_ROUNDS = 10
/** Acknowledgements held for the next poll at most (the transmitter redelivers what was not acknowledged). */
const MAX_PENDING = 10_000

export interface PollerDeps {
  log: Logger
  metrics: Pick<Metrics, 'signalPollFailures'>
  store: { signals: SignalStore }
  receiver: SignalReceiver
}

async function readLimited(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body) {
    size += chunk.length
    if (size > limit) throw new Error(`answer larger than ${limit} bytes`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, size).toString('utf8')
}

/** What one poll round did. */
export interface PollRound {
  /** False when another instance holds the lease (nothing was asked). */
  polled: boolean
  /** SETs in the answer. */
  received: number
  moreAvailable: boolean
}

/** Polls one transmitter. `start()` schedules; `pollOnce()` runs one round (tests call it directly). */
export class SignalPoller {
  readonly #t: SignalTransmitterConfig & { poll: NonNullable<SignalTransmitterConfig['poll']> }
  readonly #deps: PollerDeps
  readonly #holder = randomUUID()
  readonly #dispatcher = new Agent({ keepAliveTimeout: 30_000 })
  readonly #abort = new AbortController()
  /** jtis handled since the last successful poll, to acknowledge. */
  #ack: string[] = []
  /** A Map, not an object: a transmitter's key `__proto__` must be an entry like any other. */
  readonly #errs = new Map<string, { err: string; description: string }>()
  #failures = 0
  #timer: NodeJS.Timeout | null = null
  #running: Promise<void> | null = null

  constructor(transmitter: SignalTransmitterConfig, deps: PollerDeps) {
    if (transmitter.poll === null) throw new Error('SignalPoller: a push transmitter has nothing to poll')
    this.#t = { ...transmitter, poll: transmitter.poll }
    this.#deps = deps
  }

  get #leaseName(): string {
    return `poll:${this.#t.issuer}`
  }

  /** Schedule the first poll now and the next after each. */
  start(): void {
    this.#schedule(0)
  }

  /** Stop polling, give the lease up, and wait for a poll in flight. */
  async close(): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
    this.#abort.abort()
    await this.#running?.catch(() => undefined)
    await this.#deps.store.signals.release(this.#leaseName, this.#holder).catch(() => undefined)
    await this.#dispatcher.close()
  }

  #schedule(ms: number): void {
    if (this.#abort.signal.aborted) return
    this.#timer = setTimeout(() => {
      this.#running = this.#tick().finally(() => {
        this.#running = null
      })
    }, ms)
    this.#timer.unref()
  }

  async #tick(): Promise<void> {
    let rounds = 0
    let round: PollRound = { polled: false, received: 0, moreAvailable: false }
    do {
      round = await this.pollOnce().catch(() => ({ polled: true, received: 0, moreAvailable: false }))
      rounds++
    } while (round.moreAvailable && rounds < MAX_DRAIN_ROUNDS && !this.#abort.signal.aborted)
    const interval = this.#t.poll.intervalSec * 1000
    this.#schedule(this.#failures === 0 ? interval : Math.min(MAX_BACKOFF_MS, interval * 2 ** Math.min(this.#failures, 16)))
  }

  /** One poll: take the lease, ask, hand the SETs to the receiver. Never rejects for the transmitter's faults. */
  async pollOnce(): Promise<PollRound> {
    const { store, log } = this.#deps
    const p = this.#t.poll
    // The lease outlives one interval plus a poll's time limit: the holder renews it every poll.
    const leaseMs = p.intervalSec * 1000 * 2 + p.timeoutMs
    let leased: boolean
    try {
      leased = await store.signals.lease(this.#leaseName, this.#holder, leaseMs)
    } catch (err) {
      this.#failed(err)
      return { polled: false, received: 0, moreAvailable: false }
    }
    if (!leased) return { polled: false, received: 0, moreAvailable: false }

    const ack = this.#ack
    const setErrs = Object.fromEntries(this.#errs)
    let answer: { sets: Record<string, unknown>; moreAvailable: boolean }
    try {
      answer = await this.#ask(ack, setErrs)
    } catch (err) {
      this.#failed(err)
      return { polled: true, received: 0, moreAvailable: false }
    }
    // Acknowledged by this poll: forget them.
    this.#ack = this.#ack.slice(ack.length)
    for (const jti of Object.keys(setErrs)) this.#errs.delete(jti)
    if (this.#failures > 0) log.info({ transmitter: this.#t.issuer, failures: this.#failures }, 'Shared Signals transmitter answers polls again')
    this.#failures = 0

    const entries = Object.entries(answer.sets)
    for (const [jti, set] of entries) {
      if (this.#ack.length + this.#errs.size >= MAX_PENDING) break
      if (typeof set !== 'string') {
        this.#errs.set(jti, { err: 'invalid_request', description: 'The SET is not a string' })
        continue
      }
      try {
        await this.#deps.receiver.receive(set, { kind: 'poll', issuer: this.#t.issuer })
        this.#ack.push(jti)
      } catch (err) {
        if (err instanceof SetRefused && err.status === 400) {
          this.#errs.set(jti, err.toJSON())
          this.#deps.log.info({ transmitter: this.#t.issuer, jti, set_err: err.err, code: err.code }, 'polled SET refused; reported in setErrs')
        }
        // Otherwise (keys or store unreachable): neither acknowledged nor refused, so the transmitter sends it again.
      }
    }
    return { polled: true, received: entries.length, moreAvailable: answer.moreAvailable }
  }

  async #ask(
    ack: readonly string[],
    setErrs: Record<string, { err: string; description: string }>,
  ): Promise<{ sets: Record<string, unknown>; moreAvailable: boolean }> {
    const p = this.#t.poll
    const body: Record<string, unknown> = { ack, maxEvents: p.maxEvents, returnImmediately: true }
    if (Object.keys(setErrs).length > 0) body.setErrs = setErrs
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' }
    if (p.auth !== null) headers.authorization = p.auth
    const res = await request(p.url, {
      method: 'POST',
      dispatcher: this.#dispatcher,
      headers,
      body: JSON.stringify(body),
      headersTimeout: p.timeoutMs,
      bodyTimeout: p.timeoutMs,
      signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(p.timeoutMs)]),
    })
    if (res.statusCode !== 200) {
      await res.body.dump()
      throw new Error(`answered HTTP ${res.statusCode}`)
    }
    const parsed: unknown = JSON.parse(await readLimited(res.body, MAX_ANSWER_BYTES))
    if (typeof parsed !== 'object' || parsed === null) throw new Error('the answer is not a JSON object')
    const { sets, moreAvailable } = parsed as { sets?: unknown; moreAvailable?: unknown }
    if (typeof sets !== 'object' || sets === null || Array.isArray(sets)) throw new Error('the answer has no sets object')
    return { sets: sets as Record<string, unknown>, moreAvailable: moreAvailable === true }
  }

  #failed(err: unknown): void {
    this.#deps.metrics.signalPollFailures.inc({ transmitter: this.#t.issuer })
    if (this.#failures === 0) {
      // Once per outage: the count and the recovery line say the rest.
      this.#deps.log.warn(
        { transmitter: this.#t.issuer, poll_url: redactUrl(this.#t.poll.url), reason: err instanceof Error ? err.message : String(err) },
        'Shared Signals transmitter cannot be polled; backing off',
      )
    }
    this.#failures++
  }
}
