import type { Worker } from 'node:cluster'
import type { ToPrimary, ToWorker } from './messages.js'

/** A worker's answer to a question: the messages that carry the question's seq. */
export type Answer = Extract<ToPrimary, { seq: number }>

interface Pending {
  resolve(m: Answer | null): void
  timer: NodeJS.Timeout
  worker: Worker
}

/**
 * The questions the primary asks its workers over IPC (reload, metrics,
 * readiness), each matched to its answer by a sequence number, and each
 * given up on (null) after a timeout or when the worker exits.
 */
export class WorkerQuestions {
  readonly #send: (worker: Worker, message: ToWorker) => boolean
  readonly #pending = new Map<number, Pending>()
  #seq = 0

  /** @param send sends a message to a worker; false when its channel is gone. */
  constructor(send: (worker: Worker, message: ToWorker) => boolean) {
    this.#send = send
  }

  /** Send `message` (given its seq) and wait for the answer with that seq; null on timeout or exit. */
  ask(worker: Worker, make: (seq: number) => ToWorker, timeoutMs: number): Promise<Answer | null> {
    const seq = ++this.#seq
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#pending.delete(seq)
        resolve(null)
      }, timeoutMs)
      timer.unref()
      this.#pending.set(seq, { resolve, timer, worker })
      if (!this.#send(worker, make(seq))) {
        this.#pending.delete(seq)
        clearTimeout(timer)
        resolve(null)
      }
    })
  }

  /** An answer from `worker`: settles the question with its seq, when that worker was asked it. */
  answered(worker: Worker, m: Answer): void {
    const pending = this.#pending.get(m.seq)
    if (pending === undefined || pending.worker !== worker) return
    this.#pending.delete(m.seq)
    clearTimeout(pending.timer)
    pending.resolve(m)
  }

  /** `worker` exited: what it was asked gets null now rather than at the timeout. */
  forget(worker: Worker): void {
    for (const [seq, p] of this.#pending) {
      if (p.worker !== worker) continue
      this.#pending.delete(seq)
      clearTimeout(p.timer)
      p.resolve(null)
    }
  }
}
