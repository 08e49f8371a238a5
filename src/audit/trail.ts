/**
 * The audit trail: one event stream of JSON lines, apart from the access
 * log (docs/operating.md, "Audit trail"). `record()` is the whole API.
 *
 * A line is written to its descriptor when it is recorded (a BatchedLines
 * that sends every line at once: audit events are few, and a line written
 * is a line the kernel holds, whatever happens to the process next). A file
 * destination is fsync'd {@link AUDIT_FSYNC_INTERVAL_MS} after the first
 * line since the last fsync, at close and at exit. So: SIGTERM, SIGINT,
 * an uncaught exception lose nothing; a process killed outright (SIGKILL,
 * the OOM killer) loses nothing either, the kernel has every line; a machine
 * that loses power loses at most the last interval's lines. A stdout whose
 * reader stalls is bounded as the access log's is (log.ts LOG_BACKLOG_BYTES:
 * past it whole lines are dropped and counted in a line that says so).
 *
 * Workers: every process (primary and each worker) writes its own lines to
 * the destination, as the access log does with stdout; a file is opened
 * O_APPEND, so whole lines of several processes interleave but never mix,
 * and each process's lines form their own chain (chain.ts).
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs'
import { BatchedLines } from '../log-batch.js'
import { LOG_BACKLOG_BYTES } from '../log.js'
import type { Clock } from '../clock.js'
import type { Counter } from '../metrics.js'
import type { AuditDestination } from '../config/validated-config.js'
import { ChainWriter } from './chain.js'
import { CHAIN_START, ID_MAX, looksLikeJwt, REASON_CODE, USER_AGENT_MAX, type AuditActor, type AuditRecord, type AuditSubject } from './events.js'

export type { AuditRecord } from './events.js'

/** How long a written line may wait for its fsync (file destinations). */
export const AUDIT_FSYNC_INTERVAL_MS = 1000

/** What the rest of bearward holds: record an event. */
export interface Audit {
  record(event: AuditRecord): void
  /** Everything recorded is written (and fsync'd, for a file) before this returns. */
  flushSync(): void
  close(): void
}

/** The trail when `audit` is not configured: events go nowhere and are not counted. */
export const noAudit: Audit = {
  record: () => undefined,
  flushSync: () => undefined,
  close: () => undefined,
}

/** A string field, cut to `max` characters; a value shaped like a token is not written. */
function text(value: string, max: number): string {
  if (looksLikeJwt(value)) return '[redacted]'
  return value.length > max ? value.slice(0, max) : value
}

function optional(value: string | null | undefined, max: number): string | null {
  return value === undefined || value === null || value === '' ? null : text(value, max)
}

function actorJson(a: AuditActor): string {
  switch (a.kind) {
    case 'person':
    case 'client':
      return JSON.stringify({ kind: a.kind, id: text(a.id, ID_MAX) })
    case 'admin':
      return JSON.stringify({ kind: a.kind, id: text(a.id, ID_MAX), as: a.as })
    default:
      return JSON.stringify({ kind: a.kind })
  }
}

function subjectJson(s: AuditSubject): string {
  switch (s.kind) {
    case 'token':
      return JSON.stringify({ kind: s.kind, jti: text(s.jti, ID_MAX) })
    case 'config':
      return JSON.stringify({ kind: s.kind, digest: text(s.digest, ID_MAX) })
    case 'factor':
      return JSON.stringify({ kind: s.kind, id: text(s.id, ID_MAX), person: text(s.person, ID_MAX) })
    case 'none':
      return JSON.stringify({ kind: s.kind })
    default:
      return JSON.stringify({ kind: s.kind, id: text(s.id, ID_MAX) })
  }
}

/** The event's members (chain.ts adds time, chain, seq and prev around them). */
export function eventBody(e: AuditRecord, pid: number): string {
  const reason = e.reason === undefined ? null : REASON_CODE.test(e.reason) ? e.reason : 'unspecified'
  return [
    `"event":"${e.event}"`,
    `"pid":${pid}`,
    `"actor":${actorJson(e.actor)}`,
    `"subject":${subjectJson(e.subject)}`,
    `"client_id":${JSON.stringify(optional(e.clientId, ID_MAX))}`,
    `"address":${JSON.stringify(optional(e.address, 64))}`,
    `"user_agent":${JSON.stringify(optional(e.userAgent, USER_AGENT_MAX))}`,
    `"outcome":"${e.outcome}"`,
    `"reason":${JSON.stringify(reason)}`,
  ].join(',')
}

function droppedLine(count: number): string {
  return `{"level":40,"time":"${new Date().toISOString()}","service":"bearward","pid":${process.pid},"dropped":${count},"msg":"audit lines dropped: stdout was not reading"}\n`
}

/** The trail writing to `destination`; its chain starts now, with the marker line. */
export class AuditTrail implements Audit {
  readonly #lines: BatchedLines
  readonly #chain = new ChainWriter()
  readonly #clock: Clock
  readonly #counter: Counter
  /** The file's descriptor; null for stdout (not ours to fsync or close). */
  readonly #fd: number | null
  #unsynced = false
  #syncTimer: NodeJS.Timeout | null = null
  #closed = false
  readonly #onExit = (): void => this.flushSync()

  constructor(destination: Exclude<AuditDestination, { kind: 'off' }>, clock: Clock, counter: Counter) {
    this.#clock = clock
    this.#counter = counter
    // O_APPEND: every write lands at the end, whatever the other processes wrote; 0600: the trail names people.
    this.#fd = destination.kind === 'file' ? openSync(destination.path, 'a', 0o600) : null
    const fd = this.#fd ?? 1
    this.#lines = new BatchedLines((data, offset, length) => writeSync(fd, data, offset, length), {
      // Every line is sent as it comes: see the module comment.
      maxChars: 1,
      maxWaitMs: 0,
      maxBacklogBytes: LOG_BACKLOG_BYTES,
      retryMs: 10,
      droppedLine,
    })
    process.on('exit', this.#onExit)
    this.#write(this.#chain.next(new Date(clock.now()).toISOString(), `"event":"${CHAIN_START}","pid":${process.pid}`))
  }

  record(event: AuditRecord): void {
    if (this.#closed) return
    this.#write(this.#chain.next(new Date(this.#clock.now()).toISOString(), eventBody(event, process.pid)))
    this.#counter.inc({ event: event.event })
  }

  #write(line: string): void {
    this.#lines.write(`${line}\n`)
    if (this.#fd === null) return
    this.#unsynced = true
    if (this.#syncTimer === null) {
      this.#syncTimer = setTimeout(() => {
        this.#syncTimer = null
        this.#sync()
      }, AUDIT_FSYNC_INTERVAL_MS)
      // A pending fsync must not keep the process alive: exit and close do it.
      this.#syncTimer.unref()
    }
  }

  #sync(): void {
    if (this.#fd === null || !this.#unsynced) return
    this.#unsynced = false
    try {
      fsyncSync(this.#fd)
    } catch {
      // A file system that cannot fsync (some FUSE, /dev/stdout given as a file): the lines are written all the same.
    }
  }

  flushSync(): void {
    this.#lines.flushSync()
    this.#sync()
  }

  close(): void {
    if (this.#closed) return
    this.#closed = true
    if (this.#syncTimer !== null) clearTimeout(this.#syncTimer)
    this.#syncTimer = null
    this.flushSync()
    this.#lines.close()
    process.off('exit', this.#onExit)
    if (this.#fd !== null) closeSync(this.#fd)
  }
}

/** The trail `destination` asks for. */
export function createAudit(destination: AuditDestination, clock: Clock, counter: Counter): Audit {
  return destination.kind === 'off' ? noAudit : new AuditTrail(destination, clock, counter)
}
