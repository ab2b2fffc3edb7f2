// Router step of the lifecycle: the end of the middleware chain hands the call to its endpoint's
// handler. The definition was looked up by name when the call was parsed; the body is decoded here,
// after middleware (so authentication answers before a body is examined).
import type { TriviumCall } from './call.js'

export async function routeToHandler(call: TriviumCall<any>): Promise<unknown> {
  const definition = call.definition
  return definition.handler(call.body, call)
}
