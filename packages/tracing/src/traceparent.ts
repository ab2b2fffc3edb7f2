// W3C Trace Context `traceparent` (version 00), parsed here so the plugin needs only @opentelemetry/api
// (the API's default propagator is a no-op until an SDK is installed).
import { type SpanContext, TraceFlags, trace } from '@opentelemetry/api'

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The remote parent of a `traceparent` value, or undefined when it is missing or malformed. */
export function parseTraceparent(value: unknown): SpanContext | undefined {
  if (typeof value !== 'string') return undefined
  const m = TRACEPARENT.exec(value.trim())
  if (m === null) return undefined
  const [, version, traceId, spanId, flags] = m
  if (version === 'ff' || traceId === undefined || spanId === undefined || flags === undefined)
    return undefined
  const context: SpanContext = {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  }
  return trace.isSpanContextValid(context) ? context : undefined
}

/** `traceparent` for a span context (what a client sends to continue a trace). */
export function formatTraceparent(context: SpanContext): string {
  return `00-${context.traceId}-${context.spanId}-0${context.traceFlags & TraceFlags.SAMPLED}`
}
