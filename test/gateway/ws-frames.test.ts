/**
 * The WebSocket frame boundary tracker (src/gateway/upstream/ws-frames.ts):
 * a Close frame of ours goes out between two frames of the upstream's, never
 * inside one, however the frames are split across chunks.
 */
import t from 'tap'
import { closeFrame, FrameCutter, POLICY_VIOLATION } from '../../src/gateway/upstream/ws-frames.js'

function frame(payload: Buffer, masked = false): Buffer {
  const len = payload.length
  const head = len < 126 ? Buffer.from([0x82, len]) : len < 65536 ? Buffer.from([0x82, 126, len >> 8, len & 255]) : Buffer.alloc(10)
  if (len >= 65536) {
    head[0] = 0x82
    head[1] = 127
    head.writeBigUInt64BE(BigInt(len), 2)
  }
  if (!masked) return Buffer.concat([head, payload])
  head[1] = (head[1] as number) | 0x80
  return Buffer.concat([head, Buffer.from([1, 2, 3, 4]), payload])
}

/** Everything the cutter lets out, and whether it ended. */
function collect(cutter: FrameCutter): { out: Buffer[]; ended: Promise<void> } {
  const out: Buffer[] = []
  const ended = new Promise<void>((resolve) => cutter.on('end', resolve))
  cutter.on('data', (c: Buffer) => out.push(c))
  return { out, ended }
}

const CLOSE = closeFrame(POLICY_VIOLATION, 'access token revoked')

t.test('the Close frame carries 1008 and the reason, unmasked', async (t) => {
  t.same([...CLOSE.subarray(0, 4)], [0x88, 22, 0x03, 0xf0])
  t.equal(CLOSE.subarray(4).toString(), 'access token revoked')
  t.equal(closeFrame(1008, 'x'.repeat(300)).length, 127, 'a long reason is cut to fit a control frame (125 bytes)')
})

t.test('between frames, the Close frame goes out at once', async (t) => {
  const cutter = new FrameCutter()
  const { out, ended } = collect(cutter)
  const whole = Buffer.concat([frame(Buffer.from('one')), frame(Buffer.alloc(300, 1)), frame(Buffer.alloc(0))])
  cutter.write(whole)
  let cut = false
  cutter.cut(CLOSE, () => (cut = true))
  cutter.write(frame(Buffer.from('after')))
  await ended
  t.ok(cut)
  t.same(Buffer.concat(out), Buffer.concat([whole, CLOSE]), 'what passed, then ours; nothing after')
})

t.test('inside a frame, the rest of it passes first, split however it comes', async (t) => {
  for (const size of [5, 200, 70_000]) {
    for (const split of [1, 2, 3, 7]) {
      const cutter = new FrameCutter()
      const { out, ended } = collect(cutter)
      const first = frame(Buffer.alloc(size, 7), size === 200)
      const next = frame(Buffer.from('next'))
      const bytes = Buffer.concat([first, next])
      if (split >= first.length) continue
      // The header itself arrives in pieces, then the cut comes mid-frame.
      cutter.write(bytes.subarray(0, split))
      cutter.cut(CLOSE, () => undefined)
      t.equal(Buffer.concat(out).length, split, 'nothing of ours while the frame is open')
      cutter.write(bytes.subarray(split, first.length - 1))
      cutter.write(bytes.subarray(first.length - 1))
      await ended
      t.same(Buffer.concat(out), Buffer.concat([first, CLOSE]), `a ${size}-byte frame, header split at ${split}: the frame whole, then ours`)
    }
  }
})
