/**
 * The store, with each call made during a traced request recorded as a
 * child span of that request (database client span conventions). Used only
 * when spans are exported: otherwise the store is used unwrapped and this
 * costs nothing. Calls made outside a request (the revocation list's resync)
 * record nothing: a root span per background poll would drown the traces.
 *
 * @see https://opentelemetry.io/docs/specs/semconv/database/database-spans/
 */
import type { Store } from '../store/types.js'
import { SpanKind, withinSpan, type Tracing } from './tracing.js'

export function tracedStore(store: Store, tracing: Tracing, kind: Store['kind']): Store {
  const system = kind === 'redis' ? 'redis' : 'bearward.memory'
  const wrapped = new Map<PropertyKey, unknown>()
  return new Proxy(store, {
    get(target, property) {
      // The store's own object is the receiver: its methods and getters use #private fields, which a Proxy does not have.
      const value: unknown = Reflect.get(target, property, target)
      if (typeof value !== 'function') return value
      if (typeof property !== 'string' || property === 'close') return (value as (...args: unknown[]) => unknown).bind(target)
      let fn = wrapped.get(property)
      if (fn === undefined) {
        const method = value as (...args: unknown[]) => unknown
        fn = (...args: unknown[]): unknown => {
          const span = tracing.child(property, SpanKind.CLIENT, { 'db.system.name': system, 'db.operation.name': property })
          return span === null ? method.apply(target, args) : withinSpan(span, () => method.apply(target, args))
        }
        wrapped.set(property, fn)
      }
      return fn
    },
  })
}
