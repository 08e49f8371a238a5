/**
 * TraceIdRatioBased sampling, as the OpenTelemetry JS SDK decides it: the
 * trace id's four 32-bit words XORed together, sampled when below
 * `ratio × (2³² − 1)`. Deterministic in the trace id, so every service that
 * samples by ratio with this algorithm keeps or drops the same traces.
 * test/telemetry/sampling.test.ts checks the decisions against the SDK's
 * own sampler.
 *
 * @see https://opentelemetry.io/docs/specs/otel/trace/sdk/#traceidratiobased
 */
export class RatioSampler {
  readonly ratio: number
  readonly #upperBound: number

  constructor(ratio: number) {
    // The SDK's normalization: not a number is 0, the rest is clamped to [0, 1].
    this.ratio = Number.isNaN(ratio) ? 0 : ratio >= 1 ? 1 : ratio <= 0 ? 0 : ratio
    this.#upperBound = this.ratio === 1 ? 0x1_0000_0000 : Math.floor(this.ratio * 0xffff_ffff)
  }

  /**
   * Whether a new trace with this id is sampled. `traceId` is 32 lower-case
   * hex digits, not all zero, as trace-context.ts makes and accepts them:
   * the SDK's validity check would pass every id that reaches here.
   */
  sampled(traceId: string): boolean {
    let accumulation = 0
    for (let i = 0; i < 32; i += 8) {
      let part = 0
      for (let j = 0; j < 8; j++) {
        const c = traceId.charCodeAt(i + j)
        part = (part << 4) | (c < 58 ? c - 48 : c < 71 ? c - 55 : c - 87)
      }
      accumulation = (accumulation ^ part) >>> 0
    }
    return accumulation < this.#upperBound
  }
}
