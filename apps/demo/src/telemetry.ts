// OpenTelemetry SDK for the demo, only when OTEL_EXPORTER_OTLP_ENDPOINT is set (the plugins depend on the
// API alone). Spans go to <endpoint>/v1/traces over OTLP/HTTP (the exporter reads the standard OTEL_*
// variables); the service name is OTEL_SERVICE_NAME or `trivium-tasks`.
import { context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'

/** Installs the SDK when configured; returns the function that flushes and stops it, or undefined. */
export function startTelemetry(env: NodeJS.ProcessEnv = process.env): (() => Promise<void>) | undefined {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT) return undefined
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || 'trivium-tasks' }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter(), { scheduledDelayMillis: 1000 })],
  })
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  trace.setGlobalTracerProvider(provider)
  return () => provider.shutdown()
}
