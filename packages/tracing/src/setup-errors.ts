// @trivium/tracing's refusals at setup, one row per code (README "Setup errors"): each a TypeError with `code`.
import { setupErrors } from '@trivium/core/internal'

export const SETUP = setupErrors('@trivium/tracing', {
  TRV_TRACING_OPTIONS: {
    when: 'the options are not an object',
    message: () => 'options must be an object',
  },
  TRV_TRACING_TRACER: {
    when: '`tracer` is not an OpenTelemetry Tracer',
    message: () => 'tracer must be an OpenTelemetry Tracer (trace.getTracer(name))',
  },
})
