// One SERVER span per call on every transport, from a `first` core middleware. The parent comes from
// `traceparent`: an HTTP header; on WebSocket the upgrade's header or, for browsers that cannot set
// headers, the upgrade URL's `traceparent` query parameter; on TCP the REQUEST metadata. Attributes name
// the endpoint, transport, result and user id; never the token, headers or payloads.
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import type { Middleware, TriviumCall } from '@trivium/core'
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

function traceparentOf(call: TriviumCall<any>): unknown {
  if (call.protocol === 'tcp') return call.metadata.traceparent
  const header = call.headers.traceparent
  if (header !== undefined) return Array.isArray(header) ? header[0] : header
  return call.protocol === 'websocket' ? call.query.traceparent : undefined
}

function userIdOf(call: TriviumCall<any>): string | undefined {
  const identity = (call as { identity?: { userId?: unknown } }).identity
  const id = identity?.userId ?? call.context.user_id
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined
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
    const finish = (code: string, status: number) => {
      const userId = userIdOf(call)
      if (userId !== undefined) span.setAttribute(ATTR.userId, userId)
      span.setAttribute(ATTR.code, code)
      span.setAttribute(ATTR.status, status)
    }
    // The rest of the chain (auth, handler, its database calls) runs inside this span's context.
    return context.with(trace.setSpan(parent, span), async () => {
      try {
        const result = await next()
        finish('OK', call.definition.status)
        return result
      } catch (err) {
        const e = err as { code?: unknown; statusCode?: unknown; message?: unknown }
        const code = typeof e.code === 'string' && e.code.startsWith('TRV_') ? e.code : 'TRV_INTERNAL'
        const status = typeof e.statusCode === 'number' ? e.statusCode : 500
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
