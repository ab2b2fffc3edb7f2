// One access-log line per call on every transport (ACCESS_LOG, default on): endpoint, transport,
// status, code, duration, request id and user id. Registered `first`, so refused calls are logged too.
// Headers, metadata and bodies are never logged: tokens cannot leak through this line.
import type { CallTarget, Middleware, TriviumCall } from '@trivium/core'

export const ACCESS_LOG_MESSAGE = 'call'

function userIdOf(call: TriviumCall<any, CallTarget>): string | number | undefined {
  const id = call.identity?.userId ?? call.context.user_id
  return typeof id === 'string' || typeof id === 'number' ? id : undefined
}

/** A property of something thrown (anything can be). */
function fieldOf(err: unknown, key: 'code' | 'statusCode'): unknown {
  return typeof err === 'object' && err !== null ? Reflect.get(err, key) : undefined
}

export function accessLog(): Middleware {
  return async function triviumAccessLog(call, next) {
    const start = performance.now()
    const target = call.definition
    let status = target.kind === 'endpoint' ? target.status : undefined
    let code = 'OK'
    try {
      const result = await next()
      // A guarded plain route: `next()` resolves with the status Fastify sent (RouteOutcome).
      if (
        target.kind === 'route' &&
        typeof result === 'object' &&
        result !== null &&
        'statusCode' in result
      ) {
        status = typeof result.statusCode === 'number' ? result.statusCode : undefined
      }
      return result
    } catch (err) {
      const errorStatus = fieldOf(err, 'statusCode')
      const errorCode = fieldOf(err, 'code')
      status = typeof errorStatus === 'number' ? errorStatus : 500
      code = typeof errorCode === 'string' && errorCode.startsWith('TRV_') ? errorCode : 'TRV_INTERNAL'
      throw err
    } finally {
      call.log.info(
        {
          endpoint: call.endpoint,
          transport: call.protocol,
          status,
          code,
          durationMs: Math.round((performance.now() - start) * 1000) / 1000,
          requestId: call.requestId,
          userId: userIdOf(call),
        },
        ACCESS_LOG_MESSAGE,
      )
    }
  }
}
