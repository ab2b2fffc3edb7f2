// Router step of the lifecycle: the end of the middleware chain hands the call to its endpoint's
// handler. The definition was looked up by name when the call was parsed; the body is decoded here,
// after middleware (so authentication answers before a body is examined).
import type { TriviumCall } from './call.js'
import { isThenable } from './thenable.js'

// Not async: a handler that returns a plain value costs no extra promise; callers await the result.
export function routeToHandler(call: TriviumCall<any>): unknown {
  const definition = call.definition
  // A client or bidirectional stream's handler takes the request items (PROTOCOL.md "Client and
  // bidirectional streams"), which the frame transport feeds as they arrive.
  if (definition.requestStream) return definition.handler(call.requests as AsyncIterable<unknown>, call)
  const body = call.body
  // An asynchronous model (a Standard Schema's async checks): the handler runs once it has settled.
  if (isThenable(body)) return body.then((value) => definition.handler(value, call))
  return definition.handler(body, call)
}
