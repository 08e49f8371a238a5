import { Transform, type TransformCallback } from 'node:stream'

/** The request body went past `max_body` while streaming. */
export class BodyTooLarge extends Error {
  constructor() {
    super('request body exceeds max_body')
    this.name = 'BodyTooLarge'
  }
}

/** Counts a chunked request body as it streams and fails once it exceeds the limit. */
export class BodyLimit extends Transform {
  #left: number

  constructor(limit: number) {
    super()
    this.#left = limit
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#left -= chunk.length
    if (this.#left < 0) callback(new BodyTooLarge())
    else callback(null, chunk)
  }
}
