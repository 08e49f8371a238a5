/**
 * The store, with each call made during a traced request recorded as a
 * child span of that request (database client span conventions), named by
 * family and operation (`codes.take`). Used only when spans are exported:
 * otherwise the store is used unwrapped and this costs nothing. Calls made
 * outside a request (the revocation list's resync) record nothing: a root
 * span per background poll would drown the traces.
 *
 * @see https://opentelemetry.io/docs/specs/semconv/database/database-spans/
 */
import type { Store } from '../store/types.js'
import { SpanKind, withinSpan, type Tracing } from './tracing.js'

/** `target`'s methods (and, one level down, its families' methods) each recorded as a span named `prefix` + its name. */
function traced<T extends object>(target: T, tracing: Tracing, system: string, prefix: string): T {
  const wrapped = new Map<PropertyKey, unknown>()
  return new Proxy(target, {
    get(t, property) {
      // The target itself is the receiver: its methods and getters use #private fields, which a Proxy does not have.
      const value: unknown = Reflect.get(t, property, t)
      if (typeof property !== 'string' || property === 'close' || property === 'kind') {
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(t) : value
      }
      let fn = wrapped.get(property)
      if (fn !== undefined) return fn
      const name = `${prefix}${property}`
      if (typeof value === 'object' && value !== null && prefix === '') fn = traced(value, tracing, system, `${name}.`)
      else if (typeof value === 'function') {
        const method = value as (...args: unknown[]) => unknown
        fn = (...args: unknown[]): unknown => {
          const span = tracing.child(name, SpanKind.CLIENT, { 'db.system.name': system, 'db.operation.name': name })
          return span === null ? method.apply(t, args) : withinSpan(span, () => method.apply(t, args))
        }
      } else return value
      wrapped.set(property, fn)
      return fn
    },
  })
}

export function tracedStore(store: Store, tracing: Tracing, kind: Store['kind']): Store {
  return traced(store, tracing, kind === 'redis' ? 'redis' : 'bearward.memory', '')
}
