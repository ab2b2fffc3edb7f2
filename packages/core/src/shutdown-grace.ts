// One shutdown grace for every transport (PROTOCOL.md "Limits"): how long `app.close()` waits for the
// unary calls in flight before aborting them. HTTP (@trivium/core's `shutdownGraceMs`) and the frame
// transports (their `shutdownGraceMs`, via @trivium/frame-session) resolve it with these functions.
import { SHARED_SETUP } from './setup-errors.js'

/**
 * Default grace: 3 s, at most 30% of `pluginTimeout` (0 means Fastify has no timeout), so `app.close()`
 * with calls that never answer still ends well inside the timeout.
 */
export function defaultShutdownGrace(pluginTimeout: number): number {
  return pluginTimeout > 0 ? Math.max(1, Math.min(3000, Math.floor(pluginTimeout * 0.3))) : 3000
}

/** `shutdownGraceMs` checked (a positive integer below `pluginTimeout`), or its default. */
export function resolveShutdownGrace(pkg: string, value: unknown, pluginTimeout: number): number {
  const grace = value ?? defaultShutdownGrace(pluginTimeout)
  if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 1) {
    throw SHARED_SETUP.TRV_SETUP_SHUTDOWN_GRACE(pkg, grace)
  }
  if (pluginTimeout > 0 && grace >= pluginTimeout) {
    throw SHARED_SETUP.TRV_SETUP_SHUTDOWN_GRACE_TIMEOUT(pkg, grace, pluginTimeout)
  }
  return grace
}
