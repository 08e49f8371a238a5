import { Transform, type TransformCallback } from 'node:stream'

/**
 * The upstream-to-client half of a WebSocket tunnel, passed through with its
 * frame boundaries tracked (RFC 6455 5.2: only each frame's header is read,
 * never its payload), so the gateway can end the tunnel with a Close frame
 * of its own (5.5.1) without cutting a frame of the upstream's in two. A
 * Close frame is a control frame, which may come between the fragments of
 * a message (5.4), so any frame boundary will do.
 */

/** RFC 6455 7.4.1: 1008, a message that violates the endpoint's policy. */
export const POLICY_VIOLATION = 1008

/** A Close frame's payload is at most 125 bytes (5.5): the code and up to 123 bytes of reason. */
const MAX_REASON_BYTES = 123

/** The longest frame header: 2 bytes, 8 of extended length, 4 of mask. */
const MAX_HEADER = 14

/** An unmasked (server-to-client, 5.1) Close frame with `code` and a short UTF-8 `reason`. */
export function closeFrame(code: number, reason: string): Buffer {
  const text = Buffer.from(reason, 'utf8').subarray(0, MAX_REASON_BYTES)
  const frame = Buffer.alloc(4 + text.length)
  frame[0] = 0x88 // FIN, opcode 0x8 (Close)
  frame[1] = 2 + text.length
  frame.writeUInt16BE(code, 2)
  text.copy(frame, 4)
  return frame
}

/** The header's length once its first two bytes are known, else null. */
function headerLength(head: Buffer, have: number): number | null {
  if (have < 2) return null
  const second = head[1] as number
  const len7 = second & 0x7f
  return 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + ((second & 0x80) !== 0 ? 4 : 0)
}

function payloadLength(head: Buffer): number {
  const len7 = (head[1] as number) & 0x7f
  if (len7 === 126) return head.readUInt16BE(2)
  if (len7 === 127) return Number(head.readBigUInt64BE(2))
  return len7
}

/** Passes frames through; `cut` ends the stream with a frame of ours at the next frame boundary. */
export class FrameCutter extends Transform {
  readonly #head = Buffer.alloc(MAX_HEADER)
  /** Bytes of the current frame's header gathered so far. */
  #headLen = 0
  /** Payload bytes of the current frame still to pass. */
  #payload = 0
  #pending: { frame: Buffer; onCut: () => void } | null = null
  #cut = false

  /** Between two frames: what passed so far ends with a whole frame. */
  get atBoundary(): boolean {
    return this.#headLen === 0 && this.#payload === 0
  }

  /**
   * Send `frame` after the frame now passing (at once between frames), then
   * end; what the upstream sends after it is dropped. `onCut` is called when
   * the frame has been queued.
   */
  cut(frame: Buffer, onCut: () => void): void {
    if (this.#cut || this.#pending !== null) return
    this.#pending = { frame, onCut }
    if (this.atBoundary) this.#finish(null)
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    if (this.#cut) return done()
    let i = 0
    while (i < chunk.length) {
      if (this.#payload > 0) {
        const take = Math.min(this.#payload, chunk.length - i)
        i += take
        this.#payload -= take
        continue
      }
      if (this.#headLen === 0 && this.#pending !== null) {
        this.#finish(chunk.subarray(0, i))
        return done()
      }
      this.#head[this.#headLen++] = chunk[i++] as number
      if (this.#headLen === headerLength(this.#head, this.#headLen)) {
        this.#payload = payloadLength(this.#head)
        this.#headLen = 0
      }
    }
    if (this.#pending !== null && this.atBoundary) {
      this.#finish(chunk)
      return done()
    }
    done(null, chunk)
  }

  #finish(last: Buffer | null): void {
    const pending = this.#pending
    if (pending === null) return
    this.#cut = true
    if (last !== null && last.length > 0) this.push(last)
    this.push(pending.frame)
    this.push(null)
    pending.onCut()
  }
}
