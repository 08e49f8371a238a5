/**
 * The audit trail's hash chain: how a line is made, and how a file of them
 * is checked (`bearward audit verify FILE`).
 *
 * Each process starts its own chain with a marker line (`audit.started`,
 * `seq` 0, `prev` null) under a random chain id; every later line of that
 * process carries the chain id, the next `seq` and, in `prev`, the SHA-256
 * (hex) of the chain's previous line as written (its bytes without the
 * newline). Worker processes writing to one file interleave their chains;
 * the check follows each chain on its own. A line changed, removed or moved
 * breaks the `prev` or `seq` of the line after it in its chain, and the check
 * names that line. What a chain cannot show (the last lines of a chain cut
 * off, a whole chain removed, a chain rewritten from its marker on) is in
 * docs/threat-model.md, "Audit trail".
 */
import { createHash, randomBytes } from 'node:crypto'
import { AUDIT_EVENTS, CHAIN_START } from './events.js'

/** Every audit line's first field, so a reader can tell audit lines from log lines on a shared stdout. */
export const AUDIT_TAG = '{"log":"audit",'

export function sha256Hex(line: string): string {
  return createHash('sha256').update(line, 'utf8').digest('hex')
}

/** A new chain id: 16 hex digits, random per process start. */
export function newChainId(): string {
  return randomBytes(8).toString('hex')
}

/** One process's chain: makes lines in order, each naming the one before. */
export class ChainWriter {
  readonly id: string
  #seq = 0
  #prev: string | null = null
  constructor(id: string = newChainId()) {
    this.id = id
  }

  /**
   * The next line (without the newline) for `body`: the event's fields as
   * JSON object members, without braces, e.g. `"event":"x","outcome":"success"`.
   * The chain's own fields are added around them; `prev` is the last field.
   */
  next(time: string, body: string): string {
    const line = `${AUDIT_TAG}"time":${JSON.stringify(time)},"chain":"${this.id}","seq":${this.#seq},${body},"prev":${this.#prev === null ? 'null' : `"${this.#prev}"`}}`
    this.#seq++
    this.#prev = sha256Hex(line)
    return line
  }
}

/** What `verify` found: a summary, or the first broken line. */
export type VerifyResult = { ok: true; lines: number; events: number; chains: number; skipped: number } | { ok: false; line: number; reason: string }

interface ChainState {
  seq: number
  hash: string
  line: number
}

const KNOWN = new Set<string>([...AUDIT_EVENTS, CHAIN_START])
const HEX64 = /^[0-9a-f]{64}$/

/**
 * Check the text of an audit file. Lines that are not audit lines (log lines
 * of a shared stdout: they do not start with {@link AUDIT_TAG}) are skipped
 * and counted; an empty last line is the final newline.
 */
export function verifyAuditText(text: string): VerifyResult {
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  const chains = new Map<string, ChainState>()
  let events = 0
  let skipped = 0
  for (let i = 0; i < lines.length; i++) {
    const n = i + 1
    const raw = (lines[i] as string).replace(/\r$/, '')
    if (!raw.startsWith(AUDIT_TAG)) {
      skipped++
      continue
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(raw)
    } catch {
      return { ok: false, line: n, reason: 'not valid JSON' }
    }
    const line = parsed as Record<string, unknown>
    const { chain, seq, prev, event } = line
    if (typeof chain !== 'string' || !Number.isSafeInteger(seq) || typeof event !== 'string') {
      return { ok: false, line: n, reason: 'an audit line without chain, seq or event' }
    }
    if (!KNOWN.has(event)) return { ok: false, line: n, reason: `unknown event \`${event}\`` }
    const state = chains.get(chain)
    if (event === CHAIN_START) {
      if (state !== undefined) return { ok: false, line: n, reason: `chain ${chain} starts again (it started at line ${state.line})` }
      if (seq !== 0 || prev !== null) return { ok: false, line: n, reason: `the start of chain ${chain} must have seq 0 and prev null` }
      chains.set(chain, { seq: 0, hash: sha256Hex(raw), line: n })
      continue
    }
    if (state === undefined) {
      return { ok: false, line: n, reason: `chain ${chain} has no \`${CHAIN_START}\` line before this one (its start was removed, or is in an earlier file)` }
    }
    if (seq !== state.seq + 1) {
      return {
        ok: false,
        line: n,
        reason: `seq ${String(seq)} in chain ${chain} where ${state.seq + 1} was expected (after line ${state.line}): a line is missing or out of order`,
      }
    }
    if (typeof prev !== 'string' || !HEX64.test(prev) || prev !== state.hash) {
      return {
        ok: false,
        line: n,
        reason: `prev is not the SHA-256 of line ${state.line}, the one before it in chain ${chain}: line ${state.line} was changed`,
      }
    }
    chains.set(chain, { seq: seq as number, hash: sha256Hex(raw), line: n })
    events++
  }
  return { ok: true, lines: lines.length, events, chains: chains.size, skipped }
}
