// One SERVER span per call on every transport, from a `first` core middleware. The parent comes from
// `traceparent`: an HTTP header; on WebSocket the upgrade's header or, for browsers that cannot set
// headers, the upgrade URL's `traceparent` query parameter; on TCP the REQUEST metadata. Attributes name
// the endpoint, transport, result and user id; never the token, headers or payloads.
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import type { CallTarget, Middleware, TriviumCall } from '@trivium/core'
import { ERROR_KINDS } from '@trivium/core/internal'
import { parseTraceparent } from './traceparent.js'

export const ATTR = Object.freeze({
  endpoint: 'trivium.endpoint',
  transport: 'trivium.transport',
  code: 'trivium.code',
  status: 'trivium.status_code',
  requestId: 'trivium.request_id',
  streaming: 'trivium.streaming',
  userId: 'enduser.id',
  rpcSystem: 'rpc.system',
  rpcMethod: 'rpc.method',
})

function traceparentOf(call: TriviumCall<unknown, CallTarget>): unknown {
  if (call.protocol === 'tcp') return call.metadata.traceparent
  const header = call.headers.traceparent
  if (header !== undefined) return Array.isArray(header) ? header[0] : header
  return call.protocol === 'websocket' ? call.query.traceparent : undefined
}

function userIdOf(call: TriviumCall<unknown, CallTarget>): string | undefined {
  const id = call.identity?.userId ?? call.context.user_id
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined
}

/** A property of something thrown (anything can be). */
function fieldOf(err: unknown, key: 'code' | 'statusCode'): unknown {
  return typeof err === 'object' && err !== null ? Reflect.get(err, key) : undefined
}

/** The status Fastify sent for a guarded plain route: what its `next()` resolves to (RouteOutcome). */
function sentStatus(outcome: unknown): number | undefined {
  if (typeof outcome !== 'object' || outcome === null || !('statusCode' in outcome)) return undefined
  return typeof outcome.statusCode === 'number' ? outcome.statusCode : undefined
}

export function tracingMiddleware(tracer: Tracer): Middleware {
  return function triviumTracing(call, next) {
    const remote = parseTraceparent(traceparentOf(call))
    const parent = remote ? trace.setSpanContext(ROOT_CONTEXT, remote) : context.active()
    const span = tracer.startSpan(
      call.endpoint,
      {
        kind: SpanKind.SERVER,
        attributes: {
          [ATTR.endpoint]: call.endpoint,
          [ATTR.transport]: call.protocol,
          [ATTR.requestId]: call.requestId,
          [ATTR.streaming]: call.definition.streaming,
          [ATTR.rpcSystem]: 'trivium',
          [ATTR.rpcMethod]: call.endpoint,
        },
      },
      parent,
    )
    const finish = (code: string | undefined, status: number | undefined) => {
      const userId = userIdOf(call)
      if (userId !== undefined) span.setAttribute(ATTR.userId, userId)
      if (code !== undefined) span.setAttribute(ATTR.code, code)
      if (status !== undefined) span.setAttribute(ATTR.status, status)
    }
    // The rest of the chain (auth, handler, its database calls) runs inside this span's context.
    return context.with(trace.setSpan(parent, span), async () => {
      try {
        const result = await next()
        const target = call.definition
        if (target.kind === 'endpoint') finish('OK', target.status)
        else {
          // A guarded plain route answered itself: below 400 it is OK; above, its body is its own (no code).
          const status = sentStatus(result)
          finish(status !== undefined && status < 400 ? 'OK' : undefined, status)
          if (status !== undefined && status >= 500)
            span.setStatus({ code: SpanStatusCode.ERROR, message: `HTTP ${status}` })
        }
        return result
      } catch (err) {
        const errorCode = fieldOf(err, 'code')
        const errorStatus = fieldOf(err, 'statusCode')
        const code =
          typeof errorCode === 'string' && errorCode.startsWith('TRV_')
            ? errorCode
            : ERROR_KINDS.InternalErrorException.code
        const status = typeof errorStatus === 'number' ? errorStatus : 500
        finish(code, status)
        // The error's name and code only: a message could quote input.
        span.setStatus({ code: SpanStatusCode.ERROR, message: code })
        if (status >= 500) span.addEvent('exception', { 'exception.type': code })
        throw err
      } finally {
        span.end()
      }
    })
  }
}
