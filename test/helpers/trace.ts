import type { RequestContext } from '../../src/context.js'
import { TraceIds, traceOf } from '../../src/telemetry/trace-context.js'
import type { RequestTrace } from '../../src/telemetry/tracing.js'

const ids = new TraceIds()

/** A new, unsampled trace with no span recorded: what a request gets when spans are not exported. */
export function untracedTrace(): RequestTrace {
  return { ...traceOf(undefined, ids, false), tracestate: null, span: null }
}

/** The RequestContext fields a hand-built test context needs besides its id, logger, path and label. */
export function contextExtras(): Pick<RequestContext, 'trace' | 'httpRoute' | 'clientId'> {
  return { trace: untracedTrace(), httpRoute: null, clientId: null }
}
